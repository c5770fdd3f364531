// Chart descriptions from runs: which series, which pens, which ranges, which headline.
#include "chart_content.h"

#include <QLocale>
#include <QObject>

#include <algorithm>
#include <cmath>
#include <limits>

#include "format.h"

namespace mb {

namespace {

const ShownRun* primary_run(const std::vector<ShownRun>& runs) {
  for (const auto& r : runs) {
    if (!r.baseline) return &r;
  }
  return runs.empty() ? nullptr : &runs.front();
}

const ShownRun* primary_run(const std::vector<const ShownRun*>& runs) {
  for (const ShownRun* r : runs) {
    if (!r->baseline) return r;
  }
  return runs.empty() ? nullptr : runs.front();
}

QPen run_pen(const ShownRun& run, bool secondary) {
  QColor c = run.colour;
  if (secondary) c = c.lighter(run.baseline ? 125 : 140);
  QPen pen(c);
  pen.setWidthF(secondary ? 1.6 : 2.6);
  pen.setCapStyle(Qt::RoundCap);
  if (run.baseline) pen.setStyle(secondary ? Qt::DashDotLine : Qt::DashLine);
  else if (secondary) pen.setStyle(Qt::SolidLine);
  return pen;
}

QString headline_span(const QString& text, const QString& colour = "#444444") {
  return QStringLiteral("<br><span style='font-size:10pt; color:%1'>%2</span>").arg(colour, text.toHtmlEscaped());
}

// "1 epoch", "5 epochs", "60,000 training images": tr()'s %n plurals need a translation
// loaded, without one they print "epoch(s)".
QString count_of(int64_t n, const QString& one, const QString& many) {
  return QStringLiteral("%1 %2").arg(QLocale(QLocale::English).toString(qlonglong(n)), n == 1 ? one : many);
}

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

// A step of 1, 2, 2.5 or 5 times a power of ten giving at most `ticks` intervals over `span`.
double nice_step(double span, int ticks) {
  const double raw = std::max(span, 1e-12) / ticks;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * p >= raw * (1 - 1e-9)) return m * p;
  }
  return 10 * p;
}

// Decimals that print every multiple of `step` exactly (0.25 -> 2, 0.5 -> 1, 5 -> 0).
int decimals_for(double step) {
  int d = 0;
  while (d < 6 && std::fabs(step * std::pow(10.0, d) - std::round(step * std::pow(10.0, d))) > 1e-6) ++d;
  return d;
}

// Fits the y axis to the series: a zero-based or padded range whose ends are whole ticks.
void fit_y(ChartContent& c, bool from_zero, double floor_at = -1e300, double ceil_at = 1e300) {
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
  c.y_format = QStringLiteral("%.%1f").arg(decimals_for(step));
}

void add_epoch_series(ChartContent& c, const ShownRun& run, const char* key, const QString& name, bool secondary,
                      double scale, const QString& unit, int decimals) {
  SeriesSpec s;
  s.id = QString::fromStdString(run.record.id) + "/" + key;
  s.name = name;
  s.pen = run_pen(run, secondary);
  s.markers = true;
  s.marker_size = run.baseline ? 5.5 : secondary ? 5.0 : 8.0;
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
    s.tips.append(tip);
  }
  c.series.push_back(std::move(s));
}

void add_trace(ChartContent& c, const ShownRun& run, const RunningTrace& running, const char* key, double scale) {
  const QList<QPointF>& trace = running.points();
  if (!run.live || trace.isEmpty()) return;
  SeriesSpec s;
  s.id = QString::fromStdString(run.record.id) + "/" + key;
  s.name = run.label + QObject::tr(" (running)");
  QColor colour = run.colour;
  colour.setAlpha(150);
  s.pen = QPen(colour, 1.2, Qt::DotLine);
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

}  // namespace

void RunningTrace::append(QPointF p) {
  if (++skipped_ < stride_) return;
  skipped_ = 0;
  points_.append(p);
  if (points_.size() < kMaxPoints) return;
  QList<QPointF> kept;
  kept.reserve(kMaxPoints / 2);
  for (qsizetype i = points_.size() - 1; i >= 0; i -= 2) kept.append(points_[i]);   // the newest stays
  std::reverse(kept.begin(), kept.end());
  points_ = std::move(kept);
  stride_ *= 2;
}

QString chart_name(ChartKind kind) {
  switch (kind) {
    case ChartKind::EpochTime: return QStringLiteral("epoch-time");
    case ChartKind::Accuracy: return QStringLiteral("accuracy");
    case ChartKind::Loss: return QStringLiteral("loss");
  }
  return {};
}

QColor run_colour(int index) {
  // Okabe-Ito without black/yellow (poor on white), then Tableau extras.
  static const QColor colours[] = {QColor("#0072B2"), QColor("#D55E00"), QColor("#009E73"), QColor("#CC79A7"),
                                   QColor("#E69F00"), QColor("#56B4E9"), QColor("#8C564B"), QColor("#9467BD")};
  return colours[std::size_t(index) % std::size(colours)];
}

QColor baseline_colour(int index) {
  static const QColor greys[] = {QColor("#444444"), QColor("#7a7a7a"), QColor("#a0a0a0")};
  return greys[std::size_t(index) % std::size(greys)];
}

ChartContent build_chart(ChartKind kind, const std::vector<ShownRun>& all_runs, const ChartOptions& options) {
  // Baselines are drawn first, underneath, so the run being compared stays visible where
  // the curves coincide (same seed: they often do).
  // "Show baseline" hides baselines next to other runs, never a baseline shown on its own.
  const bool others = std::any_of(all_runs.begin(), all_runs.end(), [](const ShownRun& r) { return !r.baseline; });
  std::vector<const ShownRun*> runs;   // pointers: the records and traces are not copied
  for (const auto& r : all_runs) {
    if (r.baseline && (options.show_baseline || !others)) runs.push_back(&r);
  }
  for (const auto& r : all_runs) {
    if (!r.baseline) runs.push_back(&r);
  }
  ChartContent c;
  c.kind = kind;
  c.x_title = QObject::tr("Epoch");
  const int epochs = planned_epochs(runs);
  c.x_tick_interval = epoch_tick_interval(epochs);
  const ShownRun* primary = primary_run(runs);

  switch (kind) {
    case ChartKind::EpochTime: {
      c.y_title = QObject::tr("Time (s)");
      c.x_min = 0.5;
      c.x_max = epochs + 0.5;
      c.x_tick_anchor = 1;
      for (const ShownRun* p : runs) {
        const ShownRun& run = *p;
        QString name = run.baseline ? QObject::tr("%1 (baseline)").arg(run.label) : run.label;
        if (run.vs_baseline) name += QStringLiteral(" · %1").arg(format_reduction(run.vs_baseline->reduction));
        add_epoch_series(c, run, "time", name, false, 1.0, QStringLiteral("s"), 2);
      }
      fit_y(c, true);
      c.title = QObject::tr("<b>Time per epoch</b>");
      if (!primary) {
        c.title += headline_span(QObject::tr("No runs yet: press Run or Compare"));
      } else if (primary->vs_baseline) {
        const auto& v = *primary->vs_baseline;
        c.title += headline_span(QObject::tr("%1: %2 vs baseline (%3 s → %4 s, %5)")
                                     .arg(primary->label, format_reduction(v.reduction))
                                     .arg(v.baseline_s, 0, 'f', 2)
                                     .arg(v.run_s, 0, 'f', 2)
                                     .arg(format_speedup(v.speedup)),
                                 v.reduction >= 0 ? "#1b5e20" : "#b71c1c");
      } else if (primary->baseline) {
        c.title += headline_span(QObject::tr("baseline %1: %2 per epoch")
                                     .arg(primary->label, format_seconds(primary->record.mean_epoch_time())));
      } else if (primary->record.config.replicas > 1) {
        c.title += headline_span(QObject::tr("No single-device baseline for this configuration yet: use Compare"));
      } else {
        c.title += headline_span(QObject::tr("%1: %2 per epoch")
                                     .arg(primary->label, format_seconds(primary->record.mean_epoch_time())));
      }
      break;
    }
    case ChartKind::Accuracy: {
      c.y_title = QObject::tr("Accuracy (%)");
      c.x_min = 0;   // epoch 0 = before training; the running trace of epoch 1 starts there
      c.x_max = epochs + 0.3;
      for (const ShownRun* p : runs) {
        const ShownRun& run = *p;
        const QString tag = run.baseline ? QObject::tr(" (baseline)") : QString();
        add_epoch_series(c, run, "val_acc", run.label + QObject::tr(" val") + tag, false, 100.0, "%", 2);
        if (options.show_train) {
          add_epoch_series(c, run, "train_acc", run.label + QObject::tr(" train") + tag, true, 100.0, "%", 2);
          add_trace(c, run, run.acc_trace, "train_acc_running", 100.0);
        }
      }
      if (options.zoom_accuracy) {
        fit_y(c, false, 0.0, 100.0);
      } else {
        c.y_min = 0;
        c.y_max = 100;
        c.y_tick_interval = 20;
        c.y_format = "%.0f";
      }
      c.title = QObject::tr("<b>Accuracy</b>");
      if (primary && !primary->record.epochs.empty()) {
        QString line = QObject::tr("%1: val %2 after epoch %3")
                           .arg(primary->label, format_percent(primary->record.epochs.back().val_acc, 1))
                           .arg(primary->record.epochs.back().epoch);
        for (const ShownRun* r : runs) {
          if (r->baseline && r != primary && !r->record.epochs.empty()) {
            line += QObject::tr(" (baseline %1)").arg(format_percent(r->record.epochs.back().val_acc, 1));
            break;
          }
        }
        c.title += headline_span(line);
      } else {
        c.title += headline_span(QObject::tr("train and validation, per epoch"));
      }
      break;
    }
    case ChartKind::Loss: {
      c.y_title = QObject::tr("Cross-entropy");
      c.x_min = 0;
      c.x_max = epochs + 0.3;
      for (const ShownRun* p : runs) {
        const ShownRun& run = *p;
        const QString tag = run.baseline ? QObject::tr(" (baseline)") : QString();
        add_epoch_series(c, run, "val_loss", run.label + QObject::tr(" val") + tag, false, 1.0, QString(), 4);
        if (options.show_train) {
          add_epoch_series(c, run, "train_loss", run.label + QObject::tr(" train") + tag, true, 1.0, QString(), 4);
          add_trace(c, run, run.loss_trace, "train_loss_running", 1.0);
        }
      }
      fit_y(c, true);
      c.title = QObject::tr("<b>Loss</b>");
      if (primary && !primary->record.epochs.empty()) {
        const auto& m = primary->record.epochs.back();
        c.title += headline_span(
            QObject::tr("%1: train %2 · val %3").arg(primary->label).arg(m.train_loss, 0, 'f', 3).arg(m.val_loss, 0, 'f', 3));
      } else {
        c.title += headline_span(QObject::tr("train and validation, per epoch"));
      }
      break;
    }
  }
  return c;
}

QStringList classic_task_differences(const RunConfig& c) {
  const QLocale english(QLocale::English);   // "2,048": the card is written in English
  QStringList d;
  if (c.model != ClassicTask::kModel) d << QObject::tr("model %1").arg(QString::fromStdString(c.model));
  if (c.epochs != ClassicTask::kEpochs) d << count_of(c.epochs, QObject::tr("epoch"), QObject::tr("epochs"));
  if (c.global_batch != ClassicTask::kGlobalBatch) d << QObject::tr("global batch %1").arg(english.toString(qlonglong(c.global_batch)));
  if (std::fabs(c.learning_rate - ClassicTask::kLearningRate) > 1e-12)
    d << QObject::tr("learning rate %1").arg(c.learning_rate);
  if (c.train_size != ClassicTask::kTrainImages)
    d << count_of(c.train_size, QObject::tr("training image"), QObject::tr("training images"));
  if (c.val_size != ClassicTask::kValImages)
    d << count_of(c.val_size, QObject::tr("validation image"), QObject::tr("validation images"));
  return d;
}

QString comparison_summary_html(const std::vector<ShownRun>& runs) {
  const ShownRun* primary = primary_run(runs);
  QString html = QStringLiteral("<div style='font-size:10pt'>");
  if (!primary) {
    html += QObject::tr("<h3>No runs to compare yet</h3>"
                        "<p>Pick devices on the left and press <b>Compare</b>: it trains on one device "
                        "(the baseline) and then on all selected devices, and shows the difference here.</p>"
                        "<p><b>Reference experiment</b> reproduces the classic task in one click: "
                        "5 epochs, batch 128, one device against all selected devices.</p>");
    return html + "</div>";
  }
  const RunRecord& r = primary->record;
  const ShownRun* base = nullptr;
  for (const auto& s : runs) {
    if (s.baseline && &s != primary && s.label == primary->baseline_label) base = &s;
  }
  if (!base) {
    for (const auto& s : runs) {
      if (s.baseline && &s != primary) base = &s;
    }
  }

  html += QStringLiteral("<h3 style='margin-bottom:4px'>%1%2</h3>")
              .arg(primary->label.toHtmlEscaped(),
                   base ? QObject::tr(" <span style='font-weight:normal'>vs</span> %1").arg(base->label.toHtmlEscaped())
                        : QString());
  html += QStringLiteral("<p style='margin-top:0; color:#555'>%1 · %2 · %3 · lr %4%5</p>")
              .arg(QString::fromStdString(r.config.dataset),
                   count_of(r.config.train_size, QObject::tr("training image"), QObject::tr("training images")),
                   count_of(r.config.epochs, QObject::tr("epoch"), QObject::tr("epochs")), QString::number(r.config.learning_rate),
                   primary->live ? QObject::tr(" · <b>running</b>") : QStringLiteral(" · ") + QString::fromStdString(r.status));

  html += "<table cellspacing='0' cellpadding='3'>";
  auto row = [&html](const QString& k, const QString& v) {
    html += QStringLiteral("<tr><td style='color:#555'>%1</td><td>%2</td></tr>").arg(k, v);
  };
  const double mean = r.mean_epoch_time();
  if (base && primary->vs_baseline) {
    const auto& v = *primary->vs_baseline;
    row(QObject::tr("Mean epoch time"), QStringLiteral("%1 → <b>%2</b>").arg(format_seconds(v.baseline_s), format_seconds(v.run_s)));
    row(QObject::tr("Change"), QObject::tr("<b>%1</b> (speedup %2)").arg(format_reduction(v.reduction), format_speedup(v.speedup)));
  } else if (mean > 0) {
    row(QObject::tr("Mean epoch time"), QStringLiteral("<b>%1</b>").arg(format_seconds(mean)));
  }
  auto mean_rate = [](const RunRecord& rec) {
    double s = 0;
    for (const auto& e : rec.epochs) s += e.images_per_s;
    return rec.epochs.empty() ? 0.0 : s / double(rec.epochs.size());
  };
  if (!r.epochs.empty()) {
    row(QObject::tr("Throughput"), base && !base->record.epochs.empty()
                                       ? QStringLiteral("%1 → %2").arg(format_rate(mean_rate(base->record)), format_rate(mean_rate(r)))
                                       : format_rate(mean_rate(r)));
    const double val = r.epochs.back().val_acc;
    row(QObject::tr("Final val accuracy"),
        base && !base->record.epochs.empty()
            ? QObject::tr("<b>%1</b> (baseline %2)").arg(format_percent(val, 2), format_percent(base->record.epochs.back().val_acc, 2))
            : QStringLiteral("<b>%1</b>").arg(format_percent(val, 2)));
  }
  html += "</table>";

  if (base && r.config.replicas > 1 && !r.epochs.empty() && !primary->live) {
    const ReferenceVerdict v = judge_reference(base->record, r);
    auto mark = [](bool ok) {
      return ok ? QStringLiteral("<span style='color:#1b5e20'>\u2714 yes</span>")
                : QStringLiteral("<span style='color:#b71c1c'>\u2718 no</span>");
    };
    // The criteria only mean "the classic task" when the run used its settings; a quick
    // subset run must not read as a failed classic task.
    const QStringList differences = classic_task_differences(r.config);
    if (differences.isEmpty())
      html += QObject::tr("<p style='margin-bottom:2px'><b>Classic task criteria</b></p>");
    else
      html += QObject::tr("<p style='margin-bottom:2px'><b>Criteria of the classic task</b> "
                          "<span style='color:#555'>(these settings differ from it: %1)</span></p>")
                  .arg(differences.join(QStringLiteral(", ")).toHtmlEscaped());
    html += "<table cellspacing='0' cellpadding='2'>";
    row(QObject::tr("Time per epoch reduced by ≥ 40 %?"),
        QStringLiteral("%1 (%2)").arg(mark(v.time_ok), v.time ? format_reduction(v.time->reduction, 1) : QStringLiteral("–")));
    row(QObject::tr("Validation accuracy above 80 %?"),
        QStringLiteral("%1 (%2)").arg(mark(v.acc_ok), format_percent(v.val_acc, 2)));
    html += "</table>";
  }
  if (!r.replicas_in_sync)
    html += QObject::tr("<p style='color:#b71c1c'>Replicas diverged: the run's parameters differ between devices.</p>");
  if (!r.error.empty())
    html += QStringLiteral("<p style='color:#b71c1c'>%1</p>").arg(QString::fromStdString(r.error).toHtmlEscaped());
  html += QObject::tr("<p style='color:#777777; font-size:9pt'>Charts: solid lines are runs, dashed grey the "
                      "single-device baseline, lighter lines the training curves, dotted lines the running "
                      "values of the epoch in progress. Epoch time is training only (validation excluded).</p>");
  return html + "</div>";
}

}  // namespace mb
