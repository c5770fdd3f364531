// Exports of "Where the time goes" (see insight_export.h).
#include "insight/insight_export.h"

#include <QObject>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "charts/chart_render.h"
#include "export/export_page.h"
#include "insight/bar_chart_render.h"
#include "util/atomic_file.h"

namespace mb {

QString insight_chart_name(InsightChart chart) {
  switch (chart) {
    case InsightChart::Breakdown: return QStringLiteral("breakdown");
    case InsightChart::Timeline: return QStringLiteral("timeline");
    case InsightChart::Prediction: return QStringLiteral("prediction");
  }
  return {};
}

QImage render_insight_image(const InsightContents& c, std::optional<InsightChart> chart, const QString& title, QSize size) {
  if (chart) {
    ExportPage page(size, QSize(900, 600));
    switch (*chart) {
      case InsightChart::Breakdown: paint_bar_chart(c.breakdown, page.painter(), page.area()); break;
      case InsightChart::Timeline: paint_bar_chart(c.timeline, page.painter(), page.area()); break;
      case InsightChart::Prediction: render_content(c.prediction, page.painter(), page.area()); break;
    }
    return page.finish();
  }
  ExportPage page(size, QSize(1600, 1000));
  const auto cells = page.title_and_grid(title);
  render_content(c.epoch_time, page.painter(), cells[0]);
  paint_bar_chart(c.breakdown, page.painter(), cells[1]);
  paint_bar_chart(c.timeline, page.painter(), cells[2]);
  render_content(c.prediction, page.painter(), cells[3]);
  return page.finish();
}

std::string breakdown_csv(const RunRecord& r) {
  // The first exports' five categories keep their columns; every later one follows the totals.
  const int first[] = {phase::Forward, phase::Backward, phase::AllReduce, phase::Optimizer, phase::Wait};
  std::vector<int> later;
  for (int c = 0; c < int(time_categories().size()); ++c)
    if (std::find(std::begin(first), std::end(first), c) == std::end(first)) later.push_back(c);
  auto column = [](int c) { return fmt::format(",{}_s", time_categories()[std::size_t(c)].key); };
  std::string out = "run_id,devices,epoch,replica,simulated_straggler";
  for (int c : first) out += column(c);
  out += ",compute_s,total_s,epoch_time_s";
  for (int c : later) out += column(c);
  out += "\n";
  for (const auto& e : r.epochs) {
    for (std::size_t k = 0; k < e.replica_times.size(); ++k) {
      const PhaseTimes& t = e.replica_times[k];
      out += fmt::format("{},{},{},{},{}", r.id, r.config.devices_text(), e.epoch, k,
                         int(k) == r.config.scenario.straggler.replica ? "true" : "false");
      for (int c : first) out += fmt::format(",{}", t[c]);
      out += fmt::format(",{},{},{}", t.compute_s(), t.total(), e.time_s);
      for (int c : later) out += fmt::format(",{}", t[c]);
      out += "\n";
    }
  }
  return out;
}

bool save_text(const std::string& text, const QString& file, QString* error) {
  try {
    write_file_atomic(file.toStdString(), text);
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
}

bool save_predictions(const MachineCalibration& calibration, const PredictionScope& scope, const QString& file,
                      QString* error) {
  std::vector<Prediction> ps;
  try {
    ps = predictions_for(calibration, scope);
  } catch (const std::exception& e) {
    if (error) *error = QObject::tr("no predictions to write to %1: %2").arg(file, QString::fromStdString(e.what()));
    return false;
  }
  if (!file.endsWith(QStringLiteral(".json"), Qt::CaseInsensitive)) return save_text(predictions_csv(ps), file, error);
  nlohmann::json j = to_json(calibration, &ps);
  j["options"] = {{"batch", scope.batch},
                  {"train_size", scope.train_size},
                  {"max_replicas", scope.max_replicas},
                  {"link_gbps", scope.link_gbps}};
  return save_text(j.dump(2) + "\n", file, error);
}

bool export_trace(const RunStore& store, const std::string& id, const QString& file, QString* error) {
  try {
    const auto from = store.trace_file_for(id);
    std::ifstream in(from, std::ios::binary);
    if (!in) {
      if (error) *error = QObject::tr("run %1 kept no trace (%2)").arg(QString::fromStdString(id), QString::fromStdString(from.string()));
      return false;
    }
    std::stringstream text;
    text << in.rdbuf();
    return save_text(text.str(), file, error);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
}

}  // namespace mb
