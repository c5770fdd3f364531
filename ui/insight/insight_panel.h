// "Where the time goes", the second page beside the training charts: the time per epoch beside
// the breakdown (per replica per epoch: compute, communication, waiting), the live timeline of
// every replica's last steps beside the scaling predictor's chart, and above them Calibrate,
// the link speed for predictions beyond this machine, and the exports. Fed by the window with
// the runs on display and the live run's reports; redrawn on a 10 Hz timer while visible.
#pragma once
#include <QImage>
#include <QTimer>
#include <QWidget>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "charts/chart_content.h"
#include "experiment/calibrate.h"
#include "insight/bar_chart.h"
#include "insight/breakdown.h"
#include "insight/insight_export.h"
#include "insight/prediction.h"

class QChartView;
class QDoubleSpinBox;
class QLabel;
class QPushButton;

namespace mb {

class BarChartView;
class CalibrationRunner;
class HistoryModel;

class InsightPanel : public QWidget {
  Q_OBJECT
 public:
  // `history`: the stored runs (measured points, kept traces); outlives the panel.
  explicit InsightPanel(const HistoryModel* history, QWidget* parent = nullptr);
  ~InsightPanel() override;

  // The runs on the training charts, as ChartPanel gets them, and its options.
  void set_runs(const std::vector<ShownRun>& runs, const ChartOptions& options);
  // The live run: its start, each step report, its end (the timeline of its last steps stays
  // with its record).
  void run_started(const RunConfig& config);
  void show_step(const StepProgress& progress);
  void run_finished(const RunRecord& record);

  // The calibrations, one per model: the reference CNN's in `file`, a what-if model's beside it
  // (calibration-cnn-dense4096.json); read at once, each written after it was measured.
  void set_calibration_file(std::filesystem::path file);
  // The calibration of the model on display (the reference CNN without a run), or nullptr.
  const MachineCalibration* calibration() const { return calibration_for(shown_model()); }
  const MachineCalibration* calibration_for(const std::string& model) const;
  // For a run's prediction: its model's calibration, else the reference CNN's (the run then
  // says that it timed another model), else nullptr.
  const MachineCalibration* calibration_to_predict(const std::string& model) const;
  // Keeps a calibration under the model it timed; nullopt forgets them all.
  void set_calibration(std::optional<MachineCalibration> calibration);
  double link_gbps() const;
  bool calibrating() const;
  // Starts measuring (off the GUI thread); false while the machine trains or already measures.
  bool start_calibration(const CalibrateOptions& options = {});
  void cancel_calibration();
  // A run trains: calibration would disturb it, so the button waits.
  void set_machine_busy(bool busy);

  // What the page shows now, as pure data (the tests read these; the PNG export draws them).
  InsightContents contents() const;
  PredictionScope scope() const;
  QImage render_image(QSize size, std::optional<InsightChart> chart) const;
  bool export_breakdown_csv(const QString& file, QString* error = nullptr) const;
  bool export_predictions(const QString& file, QString* error = nullptr) const;   // .json: JSON, else CSV

  void refresh_now();
  static constexpr int kRefreshMs = 100;

 signals:
  void calibration_running(bool running);   // the machine is busy measuring, or free again
  void calibration_done(bool ok);           // after calibration_running(false): measured, or failed/cancelled
  void calibration_changed();               // predictions (and the card's) changed
  void export_png_requested();

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void refresh_if_dirty();
  void update_controls();
  const TimelineSource* timeline_source(const ShownRun* primary) const;
  void export_dialog(bool predictions, bool json);

  const HistoryModel* history_;
  std::vector<ShownRun> runs_;
  ChartOptions options_;
  RunConfig live_config_;
  std::optional<LiveEpoch> live_epoch_;
  std::optional<TimelineSource> live_timeline_;          // the live run's, kept under its id once it ends
  mutable std::map<std::string, std::optional<TimelineSource>> trace_timelines_;   // read from kept traces
  std::string shown_model() const;                        // the model of the run on display
  std::filesystem::path calibration_file(const std::string& model) const;
  std::map<std::string, MachineCalibration> calibrations_;   // by calibrated_model()
  std::filesystem::path calibration_file_;
  bool machine_busy_ = false;
  bool dirty_ = true;
  QTimer timer_;

  CalibrationRunner* runner_;
  QPushButton* calibrate_;
  QLabel* calibration_status_;
  QDoubleSpinBox* link_;
  QPushButton* export_;
  QChartView* epoch_time_view_;
  BarChartView* breakdown_view_;
  BarChartView* timeline_view_;
  QChartView* prediction_view_;
};

}  // namespace mb
