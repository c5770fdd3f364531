// The comparison card: the primary run against its baseline, and the classic task's
// criteria as core/experiment judges them, as simple HTML.
#include "charts/comparison_card.h"

#include <QLocale>
#include <QObject>

#include "common/format.h"
#include "experiment/verdict.h"
#include "model/model_spec.h"

namespace mb {

namespace {

// "1 epoch", "5 epochs", "60,000 training images": tr()'s %n plurals need a translation
// loaded, without one they print "epoch(s)".
QString count_of(int64_t n, const QString& one, const QString& many) {
  return QStringLiteral("%1 %2").arg(QLocale(QLocale::English).toString(qlonglong(n)), n == 1 ? one : many);
}

// What bounds the run, from its newest timed epoch (all replicas' time together): one
// sentence, and why. Empty for one replica or an untimed run.
QString bound_sentence(const RunRecord& r) {
  if (r.config.replicas < 2) return {};
  for (auto e = r.epochs.rbegin(); e != r.epochs.rend(); ++e) {
    if (int(e->replica_times.size()) != r.config.replicas) continue;
    PhaseTimes sum;
    for (const PhaseTimes& t : e->replica_times) sum += t;
    if (!(sum.total() > 0)) continue;
    const double comm = sum.of(TimeRole::Communication) / sum.total(), wait = sum.of(TimeRole::Waiting) / sum.total();
    const QString bytes = QObject::tr("%1 MB").arg(model_from_text(r.config.model).gradient_bytes() * 1e-6, 0, 'f', 1);
    const SimulatedLink& link = r.config.scenario.link;
    const QString over = link.on() ? QObject::tr(" over the simulated %1 Gbit/s link").arg(link.gbit, 0, 'g', 4)
                                   : QString();
    if (comm >= 0.5)
      return QObject::tr("<b>Communication-bound</b>: exchanging the gradient (%1 per step%2) takes %3 of the "
                         "replicas' time, more than computing it, so more replicas add exchange and save little.")
          .arg(bytes, over, format_percent(comm, 0));
    if (wait >= 0.15 && wait > comm)
      return QObject::tr("<b>Waiting-bound</b>: the replicas wait %1 of their time for the slowest at every step; "
                         "balanced shares (the run setup's switch, --balance in the CLI) give the faster ones more "
                         "of the batch.")
          .arg(format_percent(wait, 0));
    return QObject::tr("<b>Compute-bound</b>: computing takes %1 of the replicas' time and exchanging the gradient "
                       "(%2 per step%3) %4, so more replicas help while each keeps enough of the batch.")
        .arg(format_percent(sum.compute_s() / sum.total(), 0), bytes, over, format_percent(comm, 0));
  }
  return {};
}

}  // namespace

QStringList to_qstrings(const std::vector<std::string>& texts) {
  QStringList out;
  for (const auto& t : texts) out << QString::fromStdString(t);
  return out;
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
                   primary->live ? QObject::tr(" · <b>running</b>") : QStringLiteral(" · ") + QString::fromUtf8(to_string(r.status)));

  if (r.config.scenario.straggler.on())
    html += QObject::tr("<p style='margin-top:0; color:#b71c1c'><b>%1</b>: a demonstration. Lock-step training "
                        "runs at the pace of the slowest replica; the others wait for it at every all-reduce "
                        "(see Where the time goes).</p>")
                .arg(straggler_text(r.config).toHtmlEscaped());
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
  if (const QString bound = bound_sentence(r); !bound.isEmpty()) row(QObject::tr("What bounds it"), bound);
  if (primary->predicted && mean > 0) {
    const double off = mean / primary->predicted->epoch_s - 1;
    QString v = QObject::tr("predicted %1, measured %2, <b>%3</b>")
                    .arg(format_seconds(primary->predicted->epoch_s), format_seconds(mean), format_deviation(off));
    if (!primary->predicted->note.isEmpty())
      v += QStringLiteral("<br><span style='color:#555'>%1</span>").arg(primary->predicted->note.toHtmlEscaped());
    row(QObject::tr("Scaling predictor"), v);
  } else if (primary->predicted) {
    row(QObject::tr("Scaling predictor"), QObject::tr("predicted %1 per epoch").arg(format_seconds(primary->predicted->epoch_s)));
  } else if (!primary->no_prediction.isEmpty()) {
    row(QObject::tr("Scaling predictor"), QStringLiteral("<span style='color:#555'>%1</span>").arg(primary->no_prediction.toHtmlEscaped()));
  }
  html += "</table>";

  if (base && criteria_apply(r) && !primary->live) {
    const ReferenceVerdict v = judge_reference(base->record, r);
    auto mark = [](bool ok) {
      return ok ? QStringLiteral("<span style='color:#1b5e20'>\u2714 yes</span>")
                : QStringLiteral("<span style='color:#b71c1c'>\u2718 no</span>");
    };
    // The criteria only mean "the classic task" when the run used its settings; a quick
    // subset run must not read as a failed classic task.
    const QStringList differences = to_qstrings(v.differences);
    if (v.is_classic_task())
      html += QObject::tr("<p style='margin-bottom:2px'><b>Classic task criteria</b> "
                          "<span style='color:#555'>(%1)</span></p>")
                  .arg(QString::fromStdString(v.mode).toHtmlEscaped());
    else
      html += QObject::tr("<p style='margin-bottom:2px'><b>Criteria of the classic task</b> "
                          "<span style='color:#555'>(%1; these settings differ from it: %2)</span></p>")
                  .arg(QString::fromStdString(v.mode).toHtmlEscaped(), differences.join(QStringLiteral(", ")).toHtmlEscaped());
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
