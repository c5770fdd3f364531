// The scaling predictor's data in the window (see prediction.h).
#include "insight/prediction.h"
#include "model/model_text.h"
#include "charts/chart_headline.h"

#include <QLocale>
#include <QObject>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/backend.h"
#include "config/train_options.h"
#include "common/format.h"
#include "model/model_spec.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace mb {

namespace {

const QColor kGlobalColour(0x44, 0x77, 0xaa);
const QColor kPerReplicaColour(0xcc, 0x66, 0x77);

// The model's note without the command line's advice (the window has its own link field).
QString window_note(const std::string& note) {
  std::string n = note;
  if (const auto at = n.find(" (give --link-gbps"); at != std::string::npos) n.erase(at);
  return QString::fromStdString(n);
}

QString images(int64_t n) { return QLocale(QLocale::English).toString(qlonglong(n)); }

QString mode_name(BatchMode mode, int64_t batch) {
  return mode == BatchMode::Global ? QObject::tr("global batch %1").arg(batch)
                                           : QObject::tr("%1 per replica").arg(batch);
}

bool is_gpu_run(const RunConfig& c) { return c.device_kind() == DeviceKind::Cuda; }

double x_tick(int max) {
  for (int step : {1, 2, 4, 8, 16}) {
    if (max / step <= 12) return step;
  }
  return 32;
}

}  // namespace

nlohmann::json to_json(const MachineCalibration& m, const std::vector<Prediction>* predictions) {
  nlohmann::json j{{"calibration", to_json(m.calibration)},
                   {"backend", to_string(m.backend)},
                   {"measured_at", m.measured_at},
                   {"cpu_model", m.cpu_model}};
  if (predictions) {
    j["predictions"] = nlohmann::json::array();
    for (const auto& p : *predictions) j["predictions"].push_back(to_json(p));
  }
  return j;
}

MachineCalibration machine_calibration_from_json(const nlohmann::json& j) {
  try {
    MachineCalibration m;
    m.calibration = calibration_from_json(j.at("calibration"));
    const std::string backend = j.value("backend", std::string(to_string(Backend::OneDnn)));
    m.backend = parse_backend(backend).value_or(Backend::OneDnn);
    m.measured_at = j.value("measured_at", std::string());
    m.cpu_model = j.value("cpu_model", std::string());
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw DataError(fmt::format("calibration: {}", e.what()));
  }
}

void save_machine_calibration(const std::filesystem::path& file, const MachineCalibration& m) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  write_file_atomic(file, to_json(m).dump(2) + "\n");
}

std::optional<MachineCalibration> load_machine_calibration(const std::filesystem::path& file, std::string* warning) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  try {
    std::stringstream text;
    text << in.rdbuf();
    return machine_calibration_from_json(nlohmann::json::parse(text.str()));
  } catch (const std::exception& e) {
    if (warning) *warning = fmt::format("Ignored the calibration in {}: {}", file.string(), e.what());
    return std::nullopt;
  }
}

int64_t predictor_batch(const RunConfig& c) { return c.per_replica_batch_mode ? c.per_replica_batch : c.global_batch; }
bool per_replica_mode(const RunConfig& c) { return c.per_replica_batch_mode && c.replicas > 1; }

namespace {
// The predictor models the run's mode: balanced or lock-step, with its straggler.
void follow_mode(PredictionScope& s, const RunConfig& c) {
  s.model = c.model;
  s.scenario = c.scenario;
}
// What the curve assumes beyond the batch: balanced shares, a simulated straggler.
QString mode_tip(const PredictionScope& scope) {
  QString tip = QStringLiteral("<br>%1").arg(QString::fromStdString(scope.model.name()));
  tip += scope.scenario.balanced() ? QObject::tr("<br>balanced shares: the replicas' throughputs add")
                                   : QObject::tr("<br>lock-step: every step at the slowest replica's pace");
  for (const std::string& line : scenario_descriptions(scope.scenario))
    tip += QStringLiteral("<br>") + QString::fromStdString(line).toHtmlEscaped();
  return tip;
}
}  // namespace

bool measured_in_scope(const RunRecord& r, const PredictionScope& scope, const MachineCalibration* calibration) {
  const RunConfig& c = r.config;
  return r.status == RunStatus::Completed && !r.epochs.empty() && !is_gpu_run(c) && c.model == scope.model &&
         c.scenario == scope.scenario && c.train_size == scope.train_size && predictor_batch(c) == scope.batch &&
         (!calibration || c.backend == calibration->backend);
}

PredictionScope prediction_scope(const RunConfig* on_display, const MachineCalibration* calibration,
                                 std::span<const RunRecord> history, double link_gbps) {
  PredictionScope s;
  s.link_gbps = link_gbps;
  if (on_display && on_display->train_size > 0) {
    s.batch = std::max<int64_t>(1, predictor_batch(*on_display));
    s.train_size = on_display->train_size;
  }
  if (on_display) follow_mode(s, *on_display);
  int most = 4;
  if (calibration) most = std::max(most, 2 * calibration->calibration.cores);
  if (on_display) most = std::max(most, on_display->replicas);
  for (const RunRecord& r : history) {
    if (measured_in_scope(r, s, calibration)) most = std::max(most, r.config.replicas);
  }
  s.max_replicas = std::min(most, 64);
  return s;
}

std::vector<Prediction> predictions_for(const MachineCalibration& m, const PredictionScope& scope) {
  Calibration c = m.calibration;
  c.train_size = scope.train_size;
  PredictOptions o;
  o.max_replicas = scope.max_replicas;
  o.batch = scope.batch;
  o.link_gbps = scope.link_gbps;
  o.scenario = scope.scenario;
  return predict_scaling(c, o);
}

std::string calibrated_model(const MachineCalibration& m) { return timed_model(m.calibration); }

QString prediction_mismatch(const MachineCalibration& m, const RunConfig& c) {
  if (is_gpu_run(c)) return QObject::tr("the calibration measured this machine's CPU replicas; this run used GPUs");
  if (const std::string timed = calibrated_model(m); timed != model_text(c.model))
    return QObject::tr("the calibration timed %1; this run trains %2 (show it and press Calibrate to time that model)")
        .arg(QString::fromStdString(timed.empty() ? std::string("an unknown model") : model_name(model_from_text(timed))),
             QString::fromStdString(c.model.name()));
  if (c.backend != m.backend)
    return QObject::tr("the calibration measured the %1 kernels; this run used %2")
        .arg(QString::fromUtf8(to_string(m.backend)), QString::fromUtf8(to_string(c.backend)));
  if (c.train_size <= 0) return QObject::tr("the run's size is not known yet");
  return {};
}

std::optional<PredictedEpoch> predicted_epoch(const MachineCalibration& m, const RunConfig& c, double link_gbps,
                                              QString* why_not) {
  auto fail = [&](const QString& why) -> std::optional<PredictedEpoch> {
    if (why_not) *why_not = why;
    return std::nullopt;
  };
  if (const QString why = prediction_mismatch(m, c); !why.isEmpty()) return fail(why);
  PredictionScope scope;
  scope.batch = std::max<int64_t>(1, predictor_batch(c));
  scope.train_size = c.train_size;
  scope.max_replicas = std::max(1, c.replicas);
  scope.link_gbps = link_gbps;
  follow_mode(scope, c);
  std::vector<Prediction> ps;
  try {
    ps = predictions_for(m, scope);
  } catch (const std::exception& e) {
    return fail(QString::fromStdString(e.what()));
  }
  const BatchMode mode = per_replica_mode(c) ? BatchMode::PerReplica : BatchMode::Global;
  for (const Prediction& p : ps) {
    if (p.replicas != c.replicas || p.mode != mode) continue;
    PredictedEpoch out;
    out.epoch_s = p.epoch_s;
    QStringList notes;
    if (!p.note.empty()) notes << window_note(p.note);
    if (c.processes > 1)
      notes << QObject::tr("the model assumes the in-process all-reduce; this run exchanged between processes");
    out.note = notes.join(QStringLiteral("; "));
    return out;
  }
  return fail(QObject::tr("the predictor has no run of %1 replicas with these settings").arg(c.replicas));
}

void add_predictions(std::vector<ShownRun>& runs, const CalibrationLookup& calibration_of, double link_gbps) {
  for (ShownRun& s : runs) {
    s.predicted.reset();
    s.no_prediction.clear();
    if (const MachineCalibration* m = calibration_of(model_text(s.record.config.model)))
      s.predicted = predicted_epoch(*m, s.record.config, link_gbps, &s.no_prediction);
  }
}

void add_predictions(std::vector<ShownRun>& runs, const MachineCalibration* calibration, double link_gbps) {
  add_predictions(runs, [calibration](const std::string&) { return calibration; }, link_gbps);
}

ChartContent build_prediction_chart(const MachineCalibration* calibration, const PredictionScope& scope,
                                    std::span<const RunRecord> history, const ShownRun* on_display) {
  ChartContent c;
  c.x_title = QObject::tr("Replicas");
  c.y_title = QObject::tr("s");
  c.x_min = 0.5;
  c.x_max = scope.max_replicas + 0.5;
  c.x_tick_anchor = 1;
  c.x_tick_interval = x_tick(scope.max_replicas);

  std::vector<Prediction> predictions;
  QString error;
  if (calibration) {
    try {
      predictions = predictions_for(*calibration, scope);
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
    }
  }
  QString beyond_note;
  for (BatchMode mode : kBatchModes) {
    const bool global = mode == BatchMode::Global;
    const QColor colour = global ? kGlobalColour : kPerReplicaColour;
    SeriesSpec on, beyond;
    on.id = QStringLiteral("predicted/%1").arg(to_string(mode));
    // Short: five entries share the legend (the tooltips and the headline say the rest).
    on.name = global ? QObject::tr("global batch") : QObject::tr("per replica");
    on.pen = QPen(colour, 2.2);
    on.marker_size = 5;
    beyond.id = on.id + QStringLiteral("-beyond");
    beyond.name = QObject::tr("beyond this machine");
    beyond.pen = QPen(colour, 1.8, Qt::DashLine);
    beyond.marker_size = 5;
    beyond.in_legend = false;   // the headline says what dashed means
    for (const Prediction& p : predictions) {
      if (p.mode != mode) continue;
      QString tip = QObject::tr("<b>predicted: %1 replica(s), %2</b><br>epoch %3 · step %4 ms (compute %5 + communication %6)"
                                "<br>speedup %7, efficiency %8")
                        .arg(p.replicas)
                        .arg(mode_name(mode, scope.batch), format_seconds(p.epoch_s))
                        .arg(p.step_s * 1e3, 0, 'f', 2)
                        .arg(p.compute_s * 1e3, 0, 'f', 2)
                        .arg(p.comm_s * 1e3, 0, 'f', 2)
                        .arg(format_speedup(p.speedup), format_percent(p.efficiency, 0));
      if (!p.note.empty()) tip += QStringLiteral("<br><i>%1</i>").arg(window_note(p.note).toHtmlEscaped());
      tip += mode_tip(scope);
      const QPointF point(p.replicas, p.epoch_s);
      if (!p.beyond_machine) {
        on.points.append(point);
        on.tips.append(tip);
        continue;
      }
      if (beyond.points.isEmpty() && !on.points.isEmpty()) {   // the dashed line continues the solid one
        beyond.points.append(on.points.back());
        beyond.tips.append(on.tips.back());
      }
      beyond.points.append(point);
      beyond.tips.append(tip);
      if (beyond_note.isEmpty()) beyond_note = window_note(p.note);
    }
    if (!on.points.isEmpty()) c.series.push_back(std::move(on));
    if (!beyond.points.isEmpty()) c.series.push_back(std::move(beyond));
  }

  // The history's runs of these settings, one point per run (its mean epoch time).
  for (BatchMode mode : kBatchModes) {
    const bool global = mode == BatchMode::Global;
    SeriesSpec s;
    s.id = QStringLiteral("measured/%1").arg(to_string(mode));
    s.name = global ? QObject::tr("measured") : QObject::tr("measured, per replica");
    s.line = false;
    s.pen = QPen((global ? kGlobalColour : kPerReplicaColour).darker(130));
    s.marker_size = 9;
    for (const RunRecord& r : history) {
      if (!measured_in_scope(r, scope, calibration) || per_replica_mode(r.config) == global) continue;
      if (on_display && on_display->record.id == r.id) continue;   // drawn below, larger
      s.points.append(QPointF(r.config.replicas, r.mean_epoch_time()));
      s.tips.append(QObject::tr("<b>%1</b> (measured)<br>mean epoch %2 over %n epoch(s)<br>%3", nullptr, int(r.epochs.size()))
                        .arg(run_label(r).toHtmlEscaped(), format_seconds(r.mean_epoch_time()), format_date(r.config.start_time)));
    }
    if (!s.points.isEmpty()) c.series.push_back(std::move(s));
  }
  const RunConfig* shown = on_display ? &on_display->record.config : nullptr;
  const double shown_mean = on_display ? on_display->record.mean_epoch_time() : 0;
  if (on_display && shown_mean > 0 && !is_gpu_run(*shown) && shown->train_size == scope.train_size &&
      predictor_batch(*shown) == scope.batch) {
    SeriesSpec s;
    s.id = QStringLiteral("measured/on-display");
    s.name = QObject::tr("on display");
    s.line = false;
    s.pen = QPen(on_display->colour);
    s.marker_size = 13;
    s.points.append(QPointF(shown->replicas, shown_mean));
    s.tips.append(QObject::tr("<b>%1</b> (on display)<br>mean epoch %2").arg(on_display->label.toHtmlEscaped(), format_seconds(shown_mean)));
    c.series.push_back(std::move(s));
  }
  fit_y_axis(c, true);
  c.legend = series_legend(c);

  c.title = QObject::tr("<b>Predicted epoch time</b>");
  const QString settings = QObject::tr("%1 training images, batch %2").arg(images(scope.train_size)).arg(scope.batch);
  if (!calibration) {
    c.title += chart_headline(QObject::tr("Not calibrated yet: press Calibrate to measure this machine (under a minute)"));
  } else if (!error.isEmpty()) {
    c.title += chart_headline(QObject::tr("The calibration cannot predict: %1").arg(error), QStringLiteral("#b71c1c"));
  } else if (on_display && on_display->predicted && shown_mean > 0) {
    const double off = shown_mean / on_display->predicted->epoch_s - 1;
    c.title += chart_headline(QObject::tr("%1: predicted %2, measured %3, %4")
                            .arg(on_display->label, format_seconds(on_display->predicted->epoch_s),
                                 format_seconds(shown_mean), format_deviation(off)),
                        std::fabs(off) <= 0.15 ? QStringLiteral("#1b5e20") : QStringLiteral("#8a5a00"));
  } else if (on_display && !on_display->no_prediction.isEmpty()) {
    c.title += chart_headline(QObject::tr("%1: %2").arg(on_display->label, on_display->no_prediction), QStringLiteral("#8a5a00"));
  } else {
    c.title += chart_headline(QObject::tr("%1, this machine's calibration of %2").arg(settings, format_date(calibration->measured_at)));
  }
  if (!beyond_note.isEmpty()) c.title += chart_headline(QObject::tr("dashed: %1").arg(beyond_note), QStringLiteral("#777777"), 8.5);
  return c;
}

}  // namespace mb
