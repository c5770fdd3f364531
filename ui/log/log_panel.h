// The log panel: the records forwarded by QtLogSink, filtered by level, newest at the bottom.
#pragma once
#include <QWidget>

#include <deque>

class QComboBox;
class QPlainTextEdit;

namespace mb {

class LogPanel : public QWidget {
  Q_OBJECT
 public:
  explicit LogPanel(QWidget* parent = nullptr);

  void append(int level, const QString& time, const QString& message);
  int level() const { return level_; }      // spdlog::level of the filter
  void set_level(int level);                // clamped to the levels the filter offers
  QString text() const;                     // what is shown (for tests)

  static constexpr std::size_t kMaxRecords = 5000;

 signals:
  void level_changed(int level);

 private:
  struct Entry {
    int level;
    QString time, message;
  };
  void rerender();
  QString html(const Entry& e) const;

  std::deque<Entry> entries_;
  int level_ = 2;   // info
  QComboBox* filter_;
  QPlainTextEdit* view_;
};

}  // namespace mb
