// Number and label formatting for the workbench.
#include "common/format.h"

#include <QDateTime>
#include <QLocale>
#include <QObject>

#include <cmath>

#include "config/train_options.h"

namespace mb {

QString devices_text(const RunConfig& c) {
  const QString devices = QString::fromStdString(c.devices_text());
  return c.processes > 1 ? QStringLiteral("%1 × %2").arg(c.processes).arg(devices) : devices;
}

QString straggler_text(const RunConfig& c) {
  return QString::fromStdString(train_option("slow_replica").scenario.describe(c.scenario));
}

QString what_if_tags(const RunConfig& c) {
  QString tags;
  if (c.model != "cnn-reference") tags += QObject::tr(" · what-if %1").arg(QString::fromStdString(c.model));
  for (const std::string& tag : scenario_tags(c.scenario)) tags += QStringLiteral(" · ") + QString::fromStdString(tag);
  return tags;
}

QStringList scenario_sentences(const RunConfig& c) {
  QStringList out;
  for (const std::string& line : scenario_descriptions(c.scenario)) out << QString::fromStdString(line);
  return out;
}

QString default_run_name(const RunConfig& c) {
  QString name = devices_text(c);
  if (c.per_replica_batch_mode && c.replicas > 1)
    name += QStringLiteral(" · %1 per replica").arg(c.per_replica_batch);
  else
    name += QStringLiteral(" · batch %1").arg(c.global_batch);
  if (c.simulated) name += QStringLiteral(" (simulated)");
  return name + what_if_tags(c);
}

QString run_label(const RunRecord& r) {
  return has_user_name(r) ? QString::fromStdString(r.name) : default_run_name(r.config);
}

bool has_user_name(const RunRecord& r) {
  if (r.name.empty()) return false;
  const QString name = QString::fromStdString(r.name);
  // The trainer names runs after their devices ("2 processes x cpu:1" across processes) and
  // the workbench after devices and batch: neither is a name the user chose.
  const std::string devices = r.config.devices_text();
  const std::string processes = std::to_string(r.config.processes) + " processes x " + devices;
  return name != default_run_name(r.config) && r.name != devices && r.name != devices + " (simulated)" &&
         r.name != processes;
}

std::vector<QString> compact_labels(const std::vector<const RunRecord*>& runs) {
  auto batch_of = [](const RunConfig& c) {
    return c.per_replica_batch_mode && c.replicas > 1 ? QStringLiteral("%1/replica").arg(c.per_replica_batch)
                                                      : QStringLiteral("batch %1").arg(c.global_batch);
  };
  bool same_batch = true;
  for (const RunRecord* r : runs) same_batch = same_batch && batch_of(r->config) == batch_of(runs.front()->config);
  std::vector<QString> labels;
  for (const RunRecord* r : runs) {
    if (has_user_name(*r)) {
      labels.push_back(QString::fromStdString(r->name));
      continue;
    }
    QString l = devices_text(r->config);
    if (r->config.simulated) l += QObject::tr(" (sim.)");
    l += what_if_tags(r->config);
    if (!same_batch) l += QStringLiteral(" · ") + batch_of(r->config);
    labels.push_back(l);
  }
  // Runs that still share a label get the first setting in which they differ, then the time.
  using Attr = QString (*)(const RunRecord&);
  const Attr attrs[] = {
      [](const RunRecord& r) { return QStringLiteral("lr %1").arg(r.config.learning_rate); },
      [](const RunRecord& r) { return QStringLiteral("seed %1").arg(qulonglong(r.config.seed)); },
      [](const RunRecord& r) { return QStringLiteral("%1 img").arg(r.config.train_size); },
      [](const RunRecord& r) { return QString::fromUtf8(to_string(r.config.backend)); },
      [](const RunRecord& r) {
        const QDateTime t = QDateTime::fromString(QString::fromStdString(r.config.start_time), Qt::ISODate);
        return t.isValid() ? t.toLocalTime().toString(QStringLiteral("HH:mm:ss")) : QString();
      },
      [](const RunRecord& r) { return QString::fromStdString(r.id).right(4); },
  };
  for (Attr attr : attrs) {
    std::vector<QString> next = labels;
    for (std::size_t i = 0; i < labels.size(); ++i) {
      bool clash = false, differs = false;
      for (std::size_t j = 0; j < labels.size(); ++j) {
        if (i == j || labels[i] != labels[j]) continue;
        clash = true;
        differs = differs || attr(*runs[i]) != attr(*runs[j]);
      }
      if (clash && differs) next[i] = labels[i] + QStringLiteral(" · ") + attr(*runs[i]);
    }
    labels = std::move(next);
  }
  return labels;
}

QString format_seconds(double s) {
  if (!std::isfinite(s) || s < 0) return QStringLiteral("–");
  if (s < 10) return QStringLiteral("%1 s").arg(s, 0, 'f', 2);
  if (s < 60) return QStringLiteral("%1 s").arg(s, 0, 'f', 1);
  const int total = int(std::lround(s));
  if (total < 3600) return QStringLiteral("%1 min %2 s").arg(total / 60).arg(total % 60, 2, 10, QChar('0'));
  return QStringLiteral("%1 h %2 min").arg(total / 3600).arg((total / 60) % 60, 2, 10, QChar('0'));
}

QString format_percent(double fraction, int decimals) {
  return QStringLiteral("%1 %").arg(fraction * 100.0, 0, 'f', decimals);
}

QString format_reduction(double reduction, int decimals) {
  const double pct = reduction * 100.0;
  const QString number = QString::number(std::fabs(pct), 'f', decimals);
  if (QString::number(0.0, 'f', decimals) == number) return QStringLiteral("±") + number + QStringLiteral(" %");
  // U+2212 MINUS SIGN: a reduction reads "−42 %" as in the issue and on slides.
  return (pct > 0 ? QStringLiteral("\u2212") : QStringLiteral("+")) + number + QStringLiteral(" %");
}

QString format_deviation(double fraction) {
  const double pct = fraction * 100.0;
  const QString number = QString::number(std::fabs(pct), 'f', 0);
  if (number == QStringLiteral("0")) return QStringLiteral("±0 %");
  return (pct > 0 ? QStringLiteral("+") : QStringLiteral("\u2212")) + number + QStringLiteral(" %");
}

QString format_speedup(double speedup) { return QStringLiteral("%1\u00d7").arg(speedup, 0, 'f', 2); }

QString format_rate(double images_per_s) {
  return QStringLiteral("%1 img/s").arg(QLocale(QLocale::English).toString(std::llround(images_per_s)));
}

QString format_date(const std::string& iso_utc) {
  QDateTime t = QDateTime::fromString(QString::fromStdString(iso_utc), Qt::ISODate);
  if (!t.isValid()) return QString::fromStdString(iso_utc);
  return t.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm"));
}

}  // namespace mb
