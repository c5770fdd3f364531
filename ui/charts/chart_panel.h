// The live charts (time per epoch, accuracy, loss) and the comparison card, redrawn on a
// 10 Hz timer from the latest runs on display, never from the training thread.
#pragma once
#include <QTimer>
#include <QWidget>

#include <vector>

#include "charts/chart_content.h"

class QChart;
class QChartView;
class QCheckBox;
class QLabel;

namespace mb {

class ChartPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ChartPanel(QWidget* parent = nullptr);

  // The runs to draw; the panel redraws on its next tick (or at once with refresh_now()).
  void set_runs(std::vector<ShownRun> runs);
  const std::vector<ShownRun>& runs() const { return runs_; }
  // New running traces for the live run (if one is shown): cheaper than set_runs() on
  // every step; the redraw still waits for the next tick.
  void set_live_traces(const RunningTrace& loss, const RunningTrace& acc);

  ChartOptions options() const { return options_; }
  void set_options(const ChartOptions& options);

  void refresh_now();
  QChart* chart(ChartKind kind) const;
  QString summary_html() const;

  static constexpr int kRefreshMs = 100;

 signals:
  void options_changed();
  void export_requested();   // the "Export PNG…" button beside the chart options

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void refresh_if_dirty();

  std::vector<ShownRun> runs_;
  ChartOptions options_;
  bool dirty_ = true;
  QTimer timer_;
  QChartView* views_[3] = {};
  QLabel* summary_ = nullptr;
  QCheckBox* show_baseline_ = nullptr;
  QCheckBox* show_train_ = nullptr;
  QCheckBox* zoom_accuracy_ = nullptr;
};

}  // namespace mb
