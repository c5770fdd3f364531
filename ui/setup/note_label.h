// The grey, word-wrapped explanatory line the setup panel puts under its fields.
#pragma once
#include <QLabel>

namespace mb {

inline QLabel* note_label(QWidget* parent) {
  auto* l = new QLabel(parent);
  l->setWordWrap(true);
  l->setStyleSheet("color: #555555;");
  return l;
}

}  // namespace mb
