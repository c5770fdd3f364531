// Wheel events of unfocused fields go to the scroll area (see wheel_guard.h).
#include "common/wheel_guard.h"

#include <QAbstractSpinBox>
#include <QComboBox>
#include <QEvent>
#include <QWidget>

namespace mb {
namespace {

class WheelGuard : public QObject {
 public:
  using QObject::QObject;

 protected:
  // Filtered and ignored: QApplication then offers the event to the field's parents, up to
  // the scroll area's viewport, instead of the field.
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (event->type() != QEvent::Wheel) return false;
    const auto* field = qobject_cast<QWidget*>(watched);
    if (!field || field->hasFocus()) return false;
    event->ignore();
    return true;
  }
};

}  // namespace

void scroll_past_unfocused_fields(QWidget* root) {
  auto* guard = new WheelGuard(root);
  for (QWidget* w : root->findChildren<QWidget*>()) {
    if (!qobject_cast<QAbstractSpinBox*>(w) && !qobject_cast<QComboBox*>(w)) continue;
    w->setFocusPolicy(Qt::StrongFocus);   // the wheel no longer focuses it
    w->installEventFilter(guard);
  }
}

}  // namespace mb
