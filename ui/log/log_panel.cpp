// Log panel widget.
#include "log/log_panel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QVBoxLayout>

#include <algorithm>

#include <spdlog/spdlog.h>

namespace mb {

LogPanel::LogPanel(QWidget* parent) : QWidget(parent) {
  filter_ = new QComboBox(this);
  filter_->setObjectName("log_level");
  filter_->addItem(tr("Debug and above"), int(spdlog::level::debug));
  filter_->addItem(tr("Info and above"), int(spdlog::level::info));
  filter_->addItem(tr("Warnings and errors"), int(spdlog::level::warn));
  filter_->addItem(tr("Errors only"), int(spdlog::level::err));
  filter_->setCurrentIndex(1);
  auto* clear = new QPushButton(tr("Clear"), this);
  view_ = new QPlainTextEdit(this);
  view_->setObjectName("log_view");
  view_->setReadOnly(true);
  view_->setMaximumBlockCount(int(kMaxRecords));
  view_->setFont(QFont(QStringLiteral("DejaVu Sans Mono"), 9));
  view_->setLineWrapMode(QPlainTextEdit::NoWrap);

  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Show:"), this));
  top->addWidget(filter_);
  top->addStretch(1);
  top->addWidget(clear);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(top);
  layout->addWidget(view_);

  connect(filter_, &QComboBox::currentIndexChanged, this, [this] { set_level(filter_->currentData().toInt()); });
  connect(clear, &QPushButton::clicked, this, [this] {
    entries_.clear();
    view_->clear();
  });
}

void LogPanel::set_level(int level) {
  // A stored level may be one the filter does not offer (trace, critical, off, or junk).
  level = std::clamp(level, int(spdlog::level::debug), int(spdlog::level::err));
  if (const int i = filter_->findData(level); i >= 0 && i != filter_->currentIndex()) filter_->setCurrentIndex(i);
  if (level == level_) return;
  level_ = level;
  // Debug records are only produced when someone wants to see them.
  spdlog::set_level(static_cast<spdlog::level::level_enum>(std::min(level, int(spdlog::level::info))));
  rerender();
  emit level_changed(level);
}

QString LogPanel::html(const Entry& e) const {
  static const char* colours[] = {"#888888", "#777777", "#222222", "#b26a00", "#c62828", "#c62828", "#222222"};
  static const char* names[] = {"trace", "debug", "info", "warn", "error", "critical", ""};
  const int l = std::clamp(e.level, 0, 6);
  return QStringLiteral("<span style='color:#888'>%1</span> <span style='color:%2'>[%3] %4</span>")
      .arg(e.time, colours[l], names[l], e.message.toHtmlEscaped());
}

void LogPanel::append(int level, const QString& time, const QString& message) {
  entries_.push_back({level, time, message});
  if (entries_.size() > kMaxRecords) entries_.pop_front();
  if (level < level_) return;
  QScrollBar* sb = view_->verticalScrollBar();
  const bool at_bottom = sb->value() == sb->maximum();
  view_->appendHtml(html(entries_.back()));
  if (at_bottom) sb->setValue(sb->maximum());
}

void LogPanel::rerender() {
  view_->clear();
  for (const auto& e : entries_) {
    if (e.level >= level_) view_->appendHtml(html(e));
  }
}

QString LogPanel::text() const { return view_->toPlainText(); }

}  // namespace mb
