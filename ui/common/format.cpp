// Number and label formatting for the workbench.
#include "common/format.h"

#include <QDateTime>
#include <QLocale>
#include <QObject>

#include <algorithm>
#include <cmath>

#include "config/train_options.h"
#include "experiment/run_differences.h"

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
  if (!c.model.is_reference()) tags += QObject::tr(" · model %1").arg(QString::fromStdString(c.model.name()));
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

namespace {

QString words_text(const std::vector<std::string>& words) {
  QStringList parts;
  for (const std::string& w : words) parts << QString::fromStdString(w);
  return parts.join(QStringLiteral(" · "));
}

// Runs whose labels read alike get, in turn, what tells those runs apart, their start time and
// the end of their id, until every label is its run's alone.
void make_distinct(std::vector<QString>& labels, const std::vector<const RunRecord*>& runs) {
  auto start_time = [](const RunRecord& r) {
    const QDateTime t = QDateTime::fromString(QString::fromStdString(r.config.start_time), Qt::ISODate);
    return t.isValid() ? t.toLocalTime().toString(QStringLiteral("HH:mm:ss")) : QString();
  };
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<QString> next = labels;
    for (std::size_t i = 0; i < labels.size(); ++i) {
      std::vector<std::size_t> alike;
      for (std::size_t j = 0; j < labels.size(); ++j)
        if (labels[j] == labels[i]) alike.push_back(j);
      if (alike.size() < 2) continue;
      QString extra;
      if (pass == 0) {
        std::vector<const RunConfig*> configs;
        for (std::size_t j : alike) configs.push_back(&runs[j]->config);
        const auto words = distinguishing_words(configs);
        extra = words_text(words[std::size_t(std::find(alike.begin(), alike.end(), i) - alike.begin())]);
      } else if (pass == 1) {
        extra = start_time(*runs[i]);
      } else {
        extra = QString::fromStdString(runs[i]->id).right(4);
      }
      if (!extra.isEmpty()) next[i] = labels[i] + QStringLiteral(" · ") + extra;
    }
    labels = std::move(next);
  }
}

}  // namespace

std::vector<QString> short_labels(const std::vector<const RunRecord*>& runs, const std::vector<bool>& baseline,
                                  const std::vector<int>& compared_with) {
  std::vector<const RunConfig*> configs;
  for (const RunRecord* r : runs) configs.push_back(&r->config);
  const auto differences = distinguishing_words(configs);
  const auto words = distinguishing_words(configs, true);   // and the what-ifs
  const bool beside_others = std::find(baseline.begin(), baseline.end(), false) != baseline.end();
  std::vector<QString> labels;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (has_user_name(*runs[i])) {
      labels.push_back(QString::fromStdString(runs[i]->name));
      continue;
    }
    if (baseline[i] && beside_others) {
      labels.push_back(QObject::tr("baseline"));   // several: make_distinct adds what tells them apart
      continue;
    }
    const int with = i < compared_with.size() ? compared_with[i] : -1;
    std::vector<std::string> w;
    if (with >= 0 && std::size_t(with) < runs.size()) {
      // A baseline never runs a scenario's what-if: the run's are among the differences.
      for (const RunDifference& d : run_differences(runs[std::size_t(with)]->config, runs[i]->config))
        if (!d.second.empty()) w.push_back(d.second);
    } else {
      w = words[i];
      if (differences[i].empty()) w.insert(w.begin(), replicas_words(runs[i]->config));
    }
    labels.push_back(w.empty() ? QString::fromStdString(replicas_words(runs[i]->config)) : words_text(w));
  }
  make_distinct(labels, runs);
  return labels;
}

std::vector<QString> full_labels(const std::vector<const RunRecord*>& runs, const std::vector<bool>& baseline) {
  std::vector<QString> labels;
  for (std::size_t i = 0; i < runs.size(); ++i)
    labels.push_back(baseline[i] ? QObject::tr("%1 (baseline)").arg(run_label(*runs[i])) : run_label(*runs[i]));
  make_distinct(labels, runs);
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
