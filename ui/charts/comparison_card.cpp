// The comparison card: the primary run against its baseline, and the classic task's
// criteria as core/experiment judges them, as simple HTML.
#include "charts/comparison_card.h"

#include <QLocale>
#include <QObject>

#include "common/format.h"
#include "experiment/diagnosis.h"
#include "experiment/verdict.h"
#include "model/model_spec.h"

namespace mb {

namespace {

// "1 epoch", "5 epochs", "60,000 training images": tr()'s %n plurals need a translation
// loaded, without one they print "epoch(s)".
QString count_of(int64_t n, const QString& one, const QString& many) {
  return QStringLiteral("%1 %2").arg(QLocale(QLocale::English).toString(qlonglong(n)), n == 1 ? one : many);
}

QString grey(const QString& html) { return QStringLiteral("<span style='color:#666'>%1</span>").arg(html); }

// The answer first: the change of the time per epoch, green when it is a reduction, and the
// classic task's two criteria with the measured numbers - in grey, "n/a", when the run's
// settings are not the classic task's (a rehearsal must not read as a failed task).
QString verdict_html(const ShownRun& primary, const ShownRun& base) {
  const RunRecord& r = primary.record;
  QString html;
  if (primary.vs_baseline) {
    const auto& v = *primary.vs_baseline;
    html += QObject::tr("<p style='margin:0'><span style='font-size:12pt'><b><span style='color:%1'>%2</span></b> "
                        "time per epoch</span> <span style='color:#555'>(%3 → %4, %5)</span></p>")
                .arg(v.reduction >= 0 ? "#1b5e20" : "#b71c1c", format_reduction(v.reduction),
                     format_seconds(v.baseline_s), format_seconds(v.run_s), format_speedup(v.speedup));
  }
  if (!criteria_apply(r) || primary.live) return html;
  const ReferenceVerdict v = judge_reference(base.record, r);
  const QString time = v.time ? format_reduction(v.time->reduction) : QStringLiteral("–");
  const QString acc = format_percent(v.val_acc, 2);
  if (!v.is_classic_task()) {
    const QStringList differences = to_qstrings(v.differences);
    return html + QObject::tr("<p style='margin:2px 0 0 0; color:#666'>Classic task: n/a for these settings (%1)</p>")
                      .arg(differences.join(QStringLiteral(", ")).toHtmlEscaped());
  }
  auto mark = [](bool ok) {
    return ok ? QStringLiteral("<span style='color:#1b5e20'>\u2714 yes</span>")
              : QStringLiteral("<span style='color:#b71c1c'>\u2718 no</span>");
  };
  html += QObject::tr("<p style='margin:2px 0 0 0'><b>Classic task</b> %1<br>"
                      "Time per epoch reduced by ≥ 40 %? %2 (%3)<br>"
                      "Validation accuracy above 80 %? %4 (%5)</p>")
              .arg(grey(QStringLiteral("(%1)").arg(QString::fromStdString(v.mode).toHtmlEscaped())), mark(v.time_ok), time,
                   mark(v.acc_ok), acc);
  return html;
}

// What bounds the run, from its measurements (experiment/diagnosis.h), and whether its epochs
// or its baseline are too noisy to read.
QString bound_html(const ShownRun& primary, const ShownRun* base) {
  // Without the window's diagnosis (a calibration, the previous baseline), the run's own.
  const Diagnosis d = primary.diagnosis ? *primary.diagnosis : diagnose(primary.record, base ? &base->record : nullptr, nullptr);
  QString html;
  const QString text = QString::fromStdString(diagnosis_text(d, primary.record));
  if (!text.isEmpty()) {
    // The cause in bold: the text's first words, up to its colon.
    const qsizetype colon = text.indexOf(QLatin1Char(':'));
    html += QObject::tr("<p style='margin:4px 0 0 0'><b>What bounds it.</b> %1</p>")
                .arg(colon > 0 ? QStringLiteral("<b>%1</b>%2").arg(text.left(colon).toHtmlEscaped(), text.mid(colon).toHtmlEscaped())
                               : text.toHtmlEscaped());
  }
  if (const QString noise = QString::fromStdString(noise_text(d)); !noise.isEmpty())
    html += QStringLiteral("<p style='margin:4px 0 0 0; color:#8a5a00'>%1</p>").arg(noise.toHtmlEscaped());
  return html;
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
  const ShownRun* base = baseline_of(runs, *primary);   // the one every header names

  html += QStringLiteral("<h3 style='margin:0 0 2px 0'>%1%2</h3>")
              .arg(primary->label.toHtmlEscaped(),
                   base ? QObject::tr(" <span style='font-weight:normal'>vs</span> %1").arg(base->label.toHtmlEscaped())
                        : QString());
  // The verdict and what bounds it first: in view without scrolling on a 1366x768 screen.
  if (base) html += verdict_html(*primary, *base);
  html += bound_html(*primary, base);

  if (r.config.scenario.straggler.on())
    html += QObject::tr("<p style='margin:4px 0 0 0; color:#b71c1c'><b>%1</b>: a demonstration. Lock-step training "
                        "runs at the pace of the slowest replica; the others wait for it at every all-reduce "
                        "(see Where the time goes).</p>")
                .arg(straggler_text(r.config).toHtmlEscaped());
  html += "<table cellspacing='0' cellpadding='2' style='margin-top:4px'>";
  auto row = [&html](const QString& k, const QString& v) {
    html += QStringLiteral("<tr><td style='color:#555'>%1</td><td>%2</td></tr>").arg(k, v);
  };
  const double mean = r.mean_epoch_time();
  if (!(base && primary->vs_baseline) && mean > 0)
    row(QObject::tr("Mean epoch time"), QStringLiteral("<b>%1</b>").arg(format_seconds(mean)));
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
  // The legends key the lines; what remains to say is what the epoch time counts.
  html += QObject::tr("<p style='margin:4px 0 0 0; color:#555'>%1 · %2 · %3 · lr %4%5 · epoch times exclude validation</p>")
              .arg(QString::fromStdString(r.config.dataset),
                   count_of(r.config.train_size, QObject::tr("training image"), QObject::tr("training images")),
                   count_of(r.config.epochs, QObject::tr("epoch"), QObject::tr("epochs")), QString::number(r.config.learning_rate),
                   primary->live ? QObject::tr(" · <b>running</b>") : QStringLiteral(" · ") + QString::fromUtf8(to_string(r.status)));
  if (!r.replicas_in_sync)
    html += QObject::tr("<p style='color:#b71c1c'>Replicas diverged: the run's parameters differ between devices.</p>");
  if (!r.error.empty())
    html += QStringLiteral("<p style='color:#b71c1c'>%1</p>").arg(QString::fromStdString(r.error).toHtmlEscaped());
  return html + "</div>";
}

}  // namespace mb
