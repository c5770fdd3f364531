// The "Sweep" tab: the seed's bonus experiment in one action, and the lesson "why more GPUs
// made it slower" with its second half, "what to do about it". Its own settings (what to
// vary - the batch size, the model, the link or the remedy for communication -
// and its values, the target accuracy; everything else comes from the run setup), the verdict
// naming the best configuration, the table and the three charts, live while the sweep runs,
// and the exports (PNG, CSV, JSON).
#pragma once
#include <QWidget>

#include <cstdint>
#include <optional>
#include <vector>

#include "sweep/sweep_charts.h"
#include "sweep/sweep_progress.h"

class QChart;
class QChartView;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSplitter;
class QTableView;

namespace mb {

class SweepTableModel;

// The tab's settings (the parts of SweepOptions that are not the run setup's).
struct SweepSettings {
  std::optional<SweepAxis> axis;             // unset: keep the tab's
  std::vector<int64_t> batches;
  std::vector<ModelSpec> models;
  std::vector<SimulatedLink> links;
  std::vector<Scenario> remedies;            // the remedy fields of each (none: bare)
  double target = 0;
};

class SweepPanel : public QWidget {
  Q_OBJECT
 public:
  explicit SweepPanel(QWidget* parent = nullptr);

  // The sweep's settings: the axis, its values as typed ("64, 128, 256"; "reference, dense:4096";
  // "off, 10:25, 1:50"; "accumulate:8, bf16, bucket:25"), the target as a fraction.
  SweepAxis axis() const;
  std::vector<int64_t> batches() const;        // empty when settings_problem() is not (batch axis)
  QString settings_problem() const;            // why the axis' list cannot be swept (empty: it can)
  double target() const;
  SweepSettings settings() const;              // valid when settings_problem() is empty
  // Empty lists and a zero target keep what the tab has.
  void set_settings(const SweepSettings& settings);
  // `base`: the run setup's configuration (devices, epochs, base lr, data, seed, limits).
  SweepOptions options(const TrainConfig& base) const;

  // Following the sweep's plan (the window forwards the run controller's signals).
  void start(const SweepOptions& options);     // throws ConfigError for impossible options
  void run_started(int index, const RunConfig& config);
  void epoch(const EpochMetrics& metrics);
  void run_finished(int index, const RunRecord& record);
  void finished(bool stopped);
  void set_busy(bool busy);                    // settings read-only while any plan runs

  const SweepProgress& progress() const { return progress_; }
  SweepTableModel* table_model() const { return model_; }
  QTableView* table_view() const { return table_; }
  QChart* chart(SweepChart kind) const;
  QString headline() const;

  QImage render(QSize size) const;             // what Export PNG writes

 signals:
  void settings_changed();
  void export_png_requested();
  void export_csv_requested();
  void export_json_requested();

 private:
  void refresh();
  void refill_charts();

  void make_value_editors(const SweepOptions& defaults);
  QSplitter* make_table_and_charts();
  QLineEdit* values_edit(SweepAxis axis) const;
  void show_axis();

  SweepProgress progress_;
  SweepTableModel* model_;
  QComboBox* axis_;
  QLabel* values_label_;
  QLineEdit* batches_;
  QLineEdit* models_;
  QLineEdit* links_;
  QLineEdit* remedies_;
  QDoubleSpinBox* target_;
  QLabel* problem_;
  QLabel* headline_;
  QLabel* status_;
  QTableView* table_;
  QChartView* views_[3] = {};
  std::vector<QWidget*> exports_;
};

// "64, 128, 256" -> batch sizes; *problem says why not (empty list, a word, out of range, twice).
std::vector<int64_t> parse_batches(const QString& text, QString* problem);
QString batches_text(const std::vector<int64_t>& batches);
// The model and link lists as typed, or empty where they do not read (the tab keeps its default).
std::vector<ModelSpec> models_or_empty(const QString& text);
std::vector<SimulatedLink> links_or_empty(const QString& text);
std::vector<Scenario> remedies_or_empty(const QString& text);

}  // namespace mb
