// Exports of "Where the time goes" (see insight_export.h).
#include "insight/insight_export.h"

#include <QObject>
#include <QPainter>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "charts/chart_render.h"
#include "insight/bar_chart_render.h"
#include "util/atomic_file.h"

namespace mb {

namespace {

// As export/exporter.cpp: laid out at a logical size, scaled to the pixels asked for.
double layout_scale(QSize size, QSize reference) {
  return std::max(1.0, std::min(double(size.width()) / reference.width(), double(size.height()) / reference.height()));
}

}  // namespace

QString insight_chart_name(InsightChart chart) {
  switch (chart) {
    case InsightChart::Breakdown: return QStringLiteral("breakdown");
    case InsightChart::Timeline: return QStringLiteral("timeline");
    case InsightChart::Prediction: return QStringLiteral("prediction");
  }
  return {};
}

QImage render_insight_image(const InsightContents& c, std::optional<InsightChart> chart, const QString& title, QSize size) {
  QImage image(size, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::white);
  QPainter painter(&image);
  painter.setRenderHint(QPainter::Antialiasing);
  painter.setRenderHint(QPainter::TextAntialiasing);
  if (chart) {
    const double scale = layout_scale(size, QSize(900, 600));
    painter.scale(scale, scale);
    const QRectF r(0, 0, size.width() / scale, size.height() / scale);
    switch (*chart) {
      case InsightChart::Breakdown: paint_bar_chart(c.breakdown, painter, r); break;
      case InsightChart::Timeline: paint_bar_chart(c.timeline, painter, r); break;
      case InsightChart::Prediction: render_content(c.prediction, painter, r); break;
    }
    return image;
  }
  const double scale = layout_scale(size, QSize(1600, 1000));
  painter.scale(scale, scale);
  const double w = size.width() / scale, h = size.height() / scale;
  const double title_h = 36;
  QFont title_font = painter.font();
  title_font.setPixelSize(19);
  title_font.setBold(true);
  painter.setFont(title_font);
  painter.setPen(QColor(0x22, 0x22, 0x22));
  painter.drawText(QRectF(12, 0, w - 24, title_h), Qt::AlignVCenter | Qt::AlignLeft, title);
  const double cell_w = w / 2, cell_h = (h - title_h) / 2;
  auto cell = [&](int i) { return QRectF((i % 2) * cell_w, title_h + (i / 2) * cell_h, cell_w, cell_h).adjusted(4, 4, -4, -4); };
  render_content(c.epoch_time, painter, cell(0));
  paint_bar_chart(c.breakdown, painter, cell(1));
  paint_bar_chart(c.timeline, painter, cell(2));
  render_content(c.prediction, painter, cell(3));
  return image;
}

std::string breakdown_csv(const RunRecord& r) {
  std::string out =
      "run_id,devices,epoch,replica,simulated_straggler,forward_s,backward_s,allreduce_s,optimizer_s,wait_s,compute_s,"
      "total_s,epoch_time_s\n";
  for (const auto& e : r.epochs) {
    for (std::size_t k = 0; k < e.replica_times.size(); ++k) {
      const PhaseTimes& t = e.replica_times[k];
      out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.id, r.config.devices_text(), e.epoch, k,
                         int(k) == r.config.slow_replica ? "true" : "false", t.forward_s, t.backward_s, t.allreduce_s,
                         t.optimizer_s, t.wait_s, t.compute_s(), t.total(), e.time_s);
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
