// Chart descriptions from runs: which series, which pens, which ranges, which headline.
#include "charts/chart_content.h"
#include "charts/chart_headline.h"

#include <QObject>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/format.h"

namespace mb {

double nice_step(double span, int ticks) {
  const double raw = std::max(span, 1e-12) / ticks;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * p >= raw * (1 - 1e-9)) return m * p;
  }
  return 10 * p;
}

double coarser_step(double step, bool whole) {
  const double p = std::pow(10.0, std::floor(std::log10(step) + 1e-9));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (whole && m == 2.5) continue;
    if (m * p > step * (1 + 1e-9)) return m * p;
  }
  return 10 * p;
}

// 0.25 -> 2, 0.5 -> 1, 5 -> 0.
int decimals_for(double step) {
  int d = 0;
  while (d < 6 && std::fabs(step * std::pow(10.0, d) - std::round(step * std::pow(10.0, d))) > 1e-6) ++d;
  return d;
}

namespace {

const ShownRun* primary_run(const std::vector<const ShownRun*>& runs) {
  for (const ShownRun* r : runs) {
    if (!r->baseline) return r;
  }
  return runs.empty() ? nullptr : runs.front();
}

// A run's pen: validation solid and heavy, training lighter. A baseline is dashed, thinner, and
// drawn over the runs (build_chart): with the same seed its curves often coincide with the
// run's, and under them it would vanish; on top, the run shows between its dashes.
QPen run_pen(const ShownRun& run, bool secondary) {
  QColor c = run.colour;
  if (secondary) c = c.lighter(run.baseline ? 125 : 140);
  QPen pen(c);
  pen.setWidthF(run.baseline ? (secondary ? 1.3 : 1.8) : secondary ? 1.6 : 2.6);
  pen.setCapStyle(Qt::RoundCap);
  if (run.baseline) pen.setStyle(secondary ? Qt::DashDotLine : Qt::DashLine);
  return pen;
}

double marker_size(const ShownRun& run, bool secondary) { return run.baseline ? 5.0 : secondary ? 5.0 : 8.0; }

int planned_epochs(const std::vector<const ShownRun*>& runs) {
  int n = 1;
  for (const ShownRun* r : runs) n = std::max({n, r->record.config.epochs, int(r->record.epochs.size())});
  return n;
}

// A tick every 1, 2, 5, 10 ... epochs, so long runs keep legible integer labels.
double epoch_tick_interval(int epochs) {
  for (double step : {1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0}) {
    if (epochs / step <= 12) return step;
  }
  return 200.0;
}

// Fits the y axis to the series: a zero-based or padded range whose ends are whole ticks.
void fit_y(ChartContent& c, bool from_zero, double floor_at = -std::numeric_limits<double>::infinity(),
           double ceil_at = std::numeric_limits<double>::infinity()) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& s : c.series) {
    for (const auto& p : s.points) {
      lo = std::min(lo, p.y());
      hi = std::max(hi, p.y());
    }
  }
  if (!std::isfinite(lo)) {
    lo = 0;
    hi = from_zero ? 1 : 100;
  }
  if (from_zero) lo = 0;
  const double pad = from_zero ? 0.0 : std::max((hi - lo) * 0.1, 0.5);
  lo = std::max(floor_at, lo - pad);
  hi = std::min(ceil_at, std::max(hi * (from_zero ? 1.08 : 1.0) + pad, lo + 1e-6));
  const double step = nice_step(hi - lo, 5);
  c.y_min = std::max(floor_at, std::floor(lo / step) * step);
  c.y_max = std::min(ceil_at, std::ceil(hi / step - 1e-9) * step);
  if (c.y_max <= c.y_min) c.y_max = c.y_min + step;
  c.y_tick_interval = step;
  c.y_floor = from_zero ? 0.0 : floor_at;
  c.y_ceil = ceil_at;
}

// One series of a run: `key` of every epoch, named `name` in its tooltips; `extra` adds a line
// to each tooltip (the time chart's comparison with the baseline).
void add_epoch_series(ChartContent& c, const ShownRun& run, const char* key, const QString& name, bool secondary,
                      double scale, const QString& unit, int decimals, const QString& extra = {}) {
  SeriesSpec s;
  s.id = QString::fromStdString(run.record.id) + "/" + key;
  s.name = name;
  s.pen = run_pen(run, secondary);
  s.markers = true;
  s.marker_size = marker_size(run, secondary);
  for (const auto& m : run.record.epochs) {
    double v = 0;
    const std::string k = key;
    if (k == "time") v = m.time_s;
    else if (k == "val_acc") v = m.val_acc;
    else if (k == "train_acc") v = m.train_acc;
    else if (k == "val_loss") v = m.val_loss;
    else if (k == "train_loss") v = m.train_loss;
    s.points.append(QPointF(m.epoch, v * scale));
    QString tip = QStringLiteral("<b>%1</b><br>epoch %2: %3 %4")
                      .arg(name.toHtmlEscaped())
                      .arg(m.epoch)
                      .arg(v * scale, 0, 'f', decimals)
                      .arg(unit);
    if (k == "time")
      tip += QStringLiteral("<br>%1 · all-reduce %2").arg(format_rate(m.images_per_s), format_seconds(m.allreduce_s));
    if (k == "val_acc" || k == "train_acc")
      tip += QStringLiteral("<br>train %1 · val %2").arg(format_percent(m.train_acc, 2), format_percent(m.val_acc, 2));
    if (k == "val_loss" || k == "train_loss")
      tip += QStringLiteral("<br>train %1 · val %2").arg(m.train_loss, 0, 'f', 4).arg(m.val_loss, 0, 'f', 4);
    if (!extra.isEmpty()) tip += QStringLiteral("<br>") + extra.toHtmlEscaped();
    s.tips.append(tip);
  }
  c.series.push_back(std::move(s));
}

// The dotted line of the epoch in progress (running loss and accuracy).
QPen trace_pen(QColor colour) {
  colour.setAlpha(150);
  return QPen(colour, 1.2, Qt::DotLine);
}

void add_trace(ChartContent& c, const ShownRun& run, const QString& name, const RunningTrace& running, const char* key,
               double scale) {
  const QList<QPointF>& trace = running.points();
  if (!run.live || trace.isEmpty()) return;
  SeriesSpec s;
  s.id = QString::fromStdString(run.record.id) + "/" + key;
  s.name = QObject::tr("%1 · training, epoch in progress").arg(name);
  s.pen = trace_pen(run.colour);
  s.markers = false;
  s.in_legend = false;
  if (scale == 1.0) {
    s.points = trace;   // shared, not copied
  } else {
    s.points.reserve(trace.size());
    for (const auto& p : trace) s.points.append(QPointF(p.x(), p.y() * scale));
  }
  c.series.push_back(std::move(s));
}

// The legend: one entry per run, drawn as its main series (short name; full name as the tooltip
// and in exports), then, where each run draws several series in its colour, a key to the line
// styles in grey, so the runs need not be listed once per series ("cp… cp… cp…").
std::vector<LegendItem> run_legend(const std::vector<const ShownRun*>& runs, const std::vector<QString>& full,
                                   bool train_shown, bool trace_shown) {
  std::vector<LegendItem> legend;
  for (std::size_t i = 0; i < runs.size(); ++i)
    legend.push_back({runs[i]->label, full[i], LegendItem::Sample::Line, run_pen(*runs[i], false),
                      marker_size(*runs[i], false)});
  if (!train_shown) return legend;
  ShownRun key;   // the key draws in a run's styles, in grey
  key.colour = QColor(0x6a, 0x6a, 0x6a);
  legend.push_back({QObject::tr("validation"), {}, LegendItem::Sample::Line, run_pen(key, false), marker_size(key, false)});
  legend.push_back({QObject::tr("training"), {}, LegendItem::Sample::Line, run_pen(key, true), marker_size(key, true)});
  if (trace_shown)
    legend.push_back({QObject::tr("training, epoch in progress"), {}, LegendItem::Sample::Line, trace_pen(key.colour), 0});
  return legend;
}

bool trace_shown(const std::vector<const ShownRun*>& runs) {
  return std::any_of(runs.begin(), runs.end(), [](const ShownRun* r) {
    return r->live && (!r->acc_trace.points().isEmpty() || !r->loss_trace.points().isEmpty());
  });
}

}  // namespace

void fit_y_axis(ChartContent& content, bool from_zero) { fit_y(content, from_zero); }

std::vector<LegendItem> series_legend(const ChartContent& c) {
  std::vector<LegendItem> legend;
  for (const SeriesSpec& s : c.series) {
    if (!s.in_legend) continue;
    QPen pen = s.pen;
    if (!s.line) pen.setStyle(Qt::NoPen);   // points only: the dot alone
    legend.push_back({s.name, {}, LegendItem::Sample::Line, pen, s.markers || !s.line ? s.marker_size : 0});
  }
  return legend;
}

QString chart_name(ChartKind kind) {
  switch (kind) {
    case ChartKind::EpochTime: return QStringLiteral("epoch-time");
    case ChartKind::Accuracy: return QStringLiteral("accuracy");
    case ChartKind::Loss: return QStringLiteral("loss");
  }
  return {};
}

ChartContent build_chart(ChartKind kind, const std::vector<ShownRun>& all_runs, const ChartOptions& options) {
  // Baselines are drawn last, over the runs (run_pen says why).
  // "Show baseline" hides baselines next to other runs, never a baseline shown on its own.
  const bool others = std::any_of(all_runs.begin(), all_runs.end(), [](const ShownRun& r) { return !r.baseline; });
  std::vector<const ShownRun*> runs;   // pointers: the records and traces are not copied
  for (const auto& r : all_runs) {
    if (!r.baseline) runs.push_back(&r);
  }
  for (const auto& r : all_runs) {
    if (r.baseline && (options.show_baseline || !others)) runs.push_back(&r);
  }
  std::vector<const RunRecord*> records;
  std::vector<bool> baselines;
  for (const ShownRun* r : runs) {
    records.push_back(&r->record);
    baselines.push_back(r->baseline);
  }
  const std::vector<QString> full = full_labels(records, baselines);   // tooltips, exports
  ChartContent c;
  c.kind = kind;
  c.x_title = QObject::tr("Epoch");
  const int epochs = planned_epochs(runs);
  c.x_tick_interval = epoch_tick_interval(epochs);
  const ShownRun* primary = primary_run(runs);

  switch (kind) {
    case ChartKind::EpochTime: {
      c.y_title = QObject::tr("s");
      c.x_min = 0.5;
      c.x_max = epochs + 0.5;
      c.x_tick_anchor = 1;
      for (std::size_t i = 0; i < runs.size(); ++i) {
        const ShownRun& run = *runs[i];
        const QString vs = run.vs_baseline ? QObject::tr("%1 vs baseline").arg(format_reduction(run.vs_baseline->reduction))
                                           : QString();
        add_epoch_series(c, run, "time", full[i], false, 1.0, QStringLiteral("s"), 2, vs);
      }
      fit_y(c, true);
      c.title = QObject::tr("<b>Time per epoch</b>");
      if (!primary) {
        c.title += chart_headline(QObject::tr("No runs yet: press Run or Compare"));
      } else if (primary->vs_baseline) {
        const auto& v = *primary->vs_baseline;
        c.title += chart_headline(QObject::tr("%1: %2 vs baseline (%3 s → %4 s, %5)")
                                     .arg(primary->label, format_reduction(v.reduction))
                                     .arg(v.baseline_s, 0, 'f', 2)
                                     .arg(v.run_s, 0, 'f', 2)
                                     .arg(format_speedup(v.speedup)),
                                 v.reduction >= 0 ? "#1b5e20" : "#b71c1c");
      } else if (primary->baseline) {
        c.title += chart_headline(QObject::tr("baseline %1: %2 per epoch")
                                     .arg(primary->label, format_seconds(primary->record.mean_epoch_time())));
      } else if (primary->record.config.replicas > 1) {
        c.title += chart_headline(
            QObject::tr("%1: no baseline of one device yet: use Compare").arg(primary->label));
      } else {
        c.title += chart_headline(QObject::tr("%1: %2 per epoch")
                                     .arg(primary->label, format_seconds(primary->record.mean_epoch_time())));
      }
      break;
    }
    case ChartKind::Accuracy: {
      c.y_title = QObject::tr("%");
      c.x_min = 0;   // epoch 0 = before training; the running trace of epoch 1 starts there
      c.x_max = epochs + 0.3;
      for (std::size_t i = 0; i < runs.size(); ++i) {
        const ShownRun& run = *runs[i];
        add_epoch_series(c, run, "val_acc", QObject::tr("%1 · validation").arg(full[i]), false, 100.0, "%", 2);
        if (options.show_train) {
          add_epoch_series(c, run, "train_acc", QObject::tr("%1 · training").arg(full[i]), true, 100.0, "%", 2);
          add_trace(c, run, full[i], run.acc_trace, "train_acc_running", 100.0);
        }
      }
      if (options.zoom_accuracy) {
        fit_y(c, false, 0.0, 100.0);
      } else {
        c.y_min = c.y_floor = 0;
        c.y_max = c.y_ceil = 100;
        c.y_tick_interval = 20;
      }
      c.title = QObject::tr("<b>Accuracy</b>");
      if (primary && !primary->record.epochs.empty()) {
        QString line = QObject::tr("%1: val %2 after epoch %3")
                           .arg(primary->label, format_percent(primary->record.epochs.back().val_acc, 1))
                           .arg(primary->record.epochs.back().epoch);
        // The primary run's own baseline: the one the card and the time chart name too.
        if (const ShownRun* b = baseline_of(all_runs, *primary); b && !b->record.epochs.empty())
          line += QObject::tr(" (baseline %1)").arg(format_percent(b->record.epochs.back().val_acc, 1));
        c.title += chart_headline(line);
      } else {
        c.title += chart_headline(QObject::tr("train and validation, per epoch"));
      }
      break;
    }
    case ChartKind::Loss: {
      c.y_title.clear();   // unitless; the title says what it is (a vertical "cross-entropy" did not fit)
      c.x_min = 0;
      c.x_max = epochs + 0.3;
      for (std::size_t i = 0; i < runs.size(); ++i) {
        const ShownRun& run = *runs[i];
        add_epoch_series(c, run, "val_loss", QObject::tr("%1 · validation").arg(full[i]), false, 1.0, QString(), 4);
        if (options.show_train) {
          add_epoch_series(c, run, "train_loss", QObject::tr("%1 · training").arg(full[i]), true, 1.0, QString(), 4);
          add_trace(c, run, full[i], run.loss_trace, "train_loss_running", 1.0);
        }
      }
      fit_y(c, true);
      c.title = QObject::tr("<b>Loss</b> (cross-entropy)");
      if (primary && !primary->record.epochs.empty()) {
        const auto& m = primary->record.epochs.back();
        c.title += chart_headline(
            QObject::tr("%1: train %2 · val %3").arg(primary->label).arg(m.train_loss, 0, 'f', 3).arg(m.val_loss, 0, 'f', 3));
      } else {
        c.title += chart_headline(QObject::tr("train and validation, per epoch"));
      }
      break;
    }
  }
  c.legend = run_legend(runs, full, kind != ChartKind::EpochTime && options.show_train, trace_shown(runs));
  return c;
}

}  // namespace mb
