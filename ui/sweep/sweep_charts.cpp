// Sweep bar charts (see sweep_charts.h).
#include "sweep/sweep_charts.h"

#include "charts/chart_content.h"
#include "charts/chart_headline.h"
#include "charts/chart_render.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QCursor>
#include <QLegend>
#include <QToolTip>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <map>

#include "common/format.h"

#include <fmt/format.h>

namespace mb {

std::array<SweepChart, kSweepChartViews> sweep_charts(SweepAxis axis) {
  if (axis == SweepAxis::Batch) return {SweepChart::EpochTime, SweepChart::Accuracy, SweepChart::TimeToTarget};
  return {SweepChart::EpochTime, SweepChart::SpeedUp, SweepChart::Accuracy};
}

QString sweep_chart_name(SweepChart kind) {
  switch (kind) {
    case SweepChart::EpochTime: return QStringLiteral("sweep-epoch-time");
    case SweepChart::Accuracy: return QStringLiteral("sweep-accuracy");
    case SweepChart::TimeToTarget: return QStringLiteral("sweep-time-to-target");
    case SweepChart::SpeedUp: return QStringLiteral("sweep-speedup");
  }
  return {};
}

QColor replicas_colour(int replicas) {
  static const QColor kColours[] = {kFixedLrColour, kScaledLrColour, QColor(0x6a, 0x1b, 0x9a), QColor(0x00, 0x83, 0x8f)};
  return kColours[std::size_t(std::max(0, replicas - 1)) % std::size(kColours)];
}

namespace {

// The titles: what is measured, then in grey how to read it (on its own line, never cut, unlike
// a y axis' title); the y axis carries the unit alone.
void set_titles(SweepBars& b, SweepChart kind, const QString& target) {
  auto title = [](const QString& what, const QString& how) {
    return what + chart_headline(how, QStringLiteral("#777777"), 8.5);
  };
  switch (kind) {
    case SweepChart::EpochTime:
      b.title = title(QObject::tr("Time per epoch"), QObject::tr("lower is better"));
      b.y_title = QObject::tr("s");
      break;
    case SweepChart::Accuracy:
      b.title = title(QObject::tr("Validation accuracy"), QObject::tr("last epoch; higher is better"));
      b.y_title = QObject::tr("%");
      break;
    case SweepChart::TimeToTarget:
      b.title = title(QObject::tr("Time to %1").arg(target), QObject::tr("lower is better; no bar: not reached"));
      b.y_title = QObject::tr("s");
      break;
    case SweepChart::SpeedUp:
      b.title = title(QObject::tr("Speed-up over one replica"), QObject::tr("higher is better; below 1: slower"));
      b.y_title = QObject::tr("×");
      break;
  }
}

double value_of(SweepChart kind, const SweepProgress::Row& row) {
  if (!row.result) return 0;
  switch (kind) {
    case SweepChart::EpochTime: return row.result->epoch_s;
    case SweepChart::Accuracy: return 100 * row.result->val_acc;
    case SweepChart::TimeToTarget: return row.result->time_to_target_s ? *row.result->time_to_target_s : 0;
    case SweepChart::SpeedUp: return row.result->speedup ? *row.result->speedup : 0;
  }
  return 0;
}

QString tip_of(const SweepProgress& progress, const SweepProgress::Row& row, const QString& note) {
  const SweepOptions& o = progress.options();
  const QString target = format_percent(o.target_val_acc, 1);
  QString t = QStringLiteral("<b>%1</b>").arg(point_label(o.axis, row.point).toHtmlEscaped());
  if (o.axis == SweepAxis::Batch) t += QStringLiteral(" (lr %1)").arg(row.point.lr, 0, 'g', 4);
  if (!note.isEmpty()) t += QStringLiteral("<br>") + note;
  if (!row.result) return t + QObject::tr("<br>not run yet");
  const SweepResult& r = *row.result;
  t += QObject::tr("<br>time per epoch %1").arg(format_seconds(r.epoch_s));
  if (r.speedup) t += QObject::tr("<br>speed-up over one replica %1×").arg(*r.speedup, 0, 'f', 2);
  t += QObject::tr("<br>validation accuracy %1").arg(format_percent(r.val_acc, 2));
  if (o.axis == SweepAxis::Batch)
    t += r.time_to_target_s ? QObject::tr("<br>%1 reached after %2 (epoch %3)")
                                  .arg(target, format_seconds(*r.time_to_target_s))
                                  .arg(*r.epochs_to_target)
                            : QObject::tr("<br>%1 not reached").arg(target);
  if (row.state == SweepProgress::RowState::Running) t += QObject::tr("<br><i>running</i>");
  if (row.best) t += QObject::tr("<br><b>the best configuration</b>");
  return t;
}

// Categories: the batch sizes; sets: the lr fixed and scaled (one run stands for both at the
// reference batch, where the rule changes nothing).
void batch_bars(SweepBars& b, SweepChart kind, const SweepProgress& progress) {
  std::vector<int64_t> batches;
  for (const auto& p : progress.points())
    if (std::find(batches.begin(), batches.end(), p.global_batch) == batches.end()) batches.push_back(p.global_batch);
  std::map<std::pair<int64_t, bool>, SweepProgress::Row> by_point;
  for (const auto& row : progress.rows()) by_point[{row.point.global_batch, row.point.scale_lr}] = row;
  b.x_title = QObject::tr("global batch");
  const int64_t reference = progress.options().reference_batch;
  b.sets = {{QObject::tr("lr fixed"), QObject::tr("learning rate as set, whatever the batch"), kFixedLrColour, {}, {}},
            {QObject::tr("lr scaled"),
             QObject::tr("learning rate scaled with the batch (lr × batch / %1)").arg(reference), kScaledLrColour, {}, {}}};
  for (std::size_t i = 0; i < batches.size(); ++i) {
    b.categories << QString::number(batches[i]);
    const auto fixed = by_point.find({batches[i], false});
    auto scaled = by_point.find({batches[i], true});
    const bool same_run = scaled == by_point.end() && fixed != by_point.end();
    if (same_run) scaled = fixed;
    const SweepProgress::Row none;
    const SweepProgress::Row& f = fixed != by_point.end() ? fixed->second : none;
    const SweepProgress::Row& s = scaled != by_point.end() ? scaled->second : none;
    b.sets[0].values.push_back(value_of(kind, f));
    b.sets[1].values.push_back(value_of(kind, s));
    b.sets[0].tips.push_back(tip_of(progress, f, {}));
    b.sets[1].tips.push_back(tip_of(progress, s, same_run ? QObject::tr("the same run as batch %1 fixed: the rule "
                                                                         "changes nothing here")
                                                                  .arg(batches[i])
                                                            : QString()));
    if (f.best) b.best_category = int(i), b.best_set = 0;
    else if (s.best && !same_run) b.best_category = int(i), b.best_set = 1;
  }
}

// Categories: the models (or the links, or the remedies); sets: the replica counts. Along the
// link and remedy axes the one-replica run (no link to cross, nothing to remedy) stands in
// every category.
void replicas_bars(SweepBars& b, SweepChart kind, const SweepProgress& progress) {
  const SweepAxis axis = progress.options().axis;
  const bool shared_anchor = axis == SweepAxis::Link || axis == SweepAxis::Remedy;
  const auto rows = progress.rows();
  std::vector<int> counts;
  QStringList categories;
  // Short, so three or four fit under a third of a 1366-pixel window; the tips name them in full.
  auto category_of = [&](const SweepPoint& p) {
    if (axis == SweepAxis::Remedy) return QString::fromStdString(short_remedy_name(p.remedy));
    if (axis != SweepAxis::Model) return QString::fromStdString(short_link_name(p.link));
    const auto width = reference_family_width(p.model);
    return width ? QString::number(*width) : QString::fromStdString(p.model.name());
  };
  for (const auto& row : rows) {
    if (std::find(counts.begin(), counts.end(), row.point.replicas) == counts.end()) counts.push_back(row.point.replicas);
    const bool anchor = shared_anchor && row.point.replicas == 1;
    if (!anchor && !categories.contains(category_of(row.point))) categories << category_of(row.point);
  }
  std::sort(counts.begin(), counts.end());
  if (kind == SweepChart::SpeedUp) counts.erase(std::remove(counts.begin(), counts.end(), 1), counts.end());
  b.categories = categories;
  const bool widths = std::all_of(rows.begin(), rows.end(), [](const auto& r) { return reference_family_width(r.point.model).has_value(); });
  b.x_title = axis == SweepAxis::Model    ? (widths ? QObject::tr("dense width") : QObject::tr("model"))
              : axis == SweepAxis::Remedy ? QObject::tr("remedy")
                                          : QObject::tr("link, Gbit/s");
  const QString anchor_note = axis == SweepAxis::Link
                                  ? QObject::tr("the same one-replica run in every group: there is no link to cross")
                                  : QObject::tr("the same one-replica run in every group: one replica exchanges "
                                                "nothing, so there is nothing to remedy");
  const SweepProgress::Row none;
  for (const int n : counts) {
    const QString name = n == 1 ? QObject::tr("1 replica") : QObject::tr("%1 replicas").arg(n);
    SweepBarSet set{name, name, replicas_colour(n), {}, {}};
    for (int c = 0; c < int(categories.size()); ++c) {
      const SweepProgress::Row* found = &none;
      for (const auto& row : rows)
        if (row.point.replicas == n && (category_of(row.point) == categories[c] || (shared_anchor && n == 1)))
          found = &row;
      set.values.push_back(value_of(kind, *found));
      set.tips.push_back(tip_of(progress, *found, shared_anchor && n == 1 ? anchor_note : QString()));
      if (found->best) b.best_category = c, b.best_set = int(b.sets.size());
    }
    b.sets.push_back(std::move(set));
  }
}

}  // namespace

std::string short_link_name(const SimulatedLink& link) {
  return link.gbit > 0 ? fmt::format("{:g}", link.gbit) : std::string("own");
}

SweepBars sweep_bars(SweepChart kind, const SweepProgress& progress) {
  SweepBars b;
  set_titles(b, kind, format_percent(progress.options().target_val_acc, 1));
  if (progress.options().axis == SweepAxis::Batch) batch_bars(b, kind, progress);
  else replicas_bars(b, kind, progress);
  double top = 0;
  for (const SweepBarSet& set : b.sets)
    for (double v : set.values) top = std::max(top, v);
  // Room above the tallest bar; the axis rounds it up to a whole tick (fill_sweep_chart).
  b.y_max = kind == SweepChart::Accuracy ? 100 : kind == SweepChart::SpeedUp ? std::max(top, 1.0) * 1.08
            : top > 0                    ? top * 1.08
                                         : 1;
  if (kind == SweepChart::Accuracy) b.y_ceil = 100;
  return b;
}

void fill_sweep_chart(QChart* chart, const SweepBars& b, LegendNames names) {
  // The axes stay from one fill to the next: Qt Charts (6.4) leaves a removed axis's labels
  // in the scene, drawn over the new ones.
  chart->removeAllSeries();
  QBarCategoryAxis* x = nullptr;
  QValueAxis* y = nullptr;
  for (QAbstractAxis* a : chart->axes()) {
    if (!x) x = qobject_cast<QBarCategoryAxis*>(a);
    if (!y) y = qobject_cast<QValueAxis*>(a);
  }
  const bool new_axes = !x || !y;
  if (new_axes) {
    for (QAbstractAxis* a : chart->axes()) chart->removeAxis(a);
    x = new QBarCategoryAxis(chart);
    y = new QValueAxis(chart);
  }
  if (new_axes) chart->setTheme(QChart::ChartThemeLight);   // once: a theme restyles what is there
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->setBackgroundRoundness(0);
  if (!ChartLegend::of(chart)) chart->setMargins(QMargins(4, 2, 4, 2));   // the legend keeps them after
  chart->setTitle(b.title);
  QFont title_font = chart->titleFont();
  title_font.setPointSizeF(11);
  title_font.setBold(true);
  chart->setTitleFont(title_font);
  QFont legend_font = chart->legend()->font();
  legend_font.setPointSizeF(9);
  chart->legend()->setFont(legend_font);

  auto* series = new QBarSeries;
  std::vector<LegendItem> legend;
  for (int k = 0; k < int(b.sets.size()); ++k) {
    const SweepBarSet& from = b.sets[std::size_t(k)];
    auto* set = new QBarSet(from.label);
    set->setColor(from.colour);
    set->setBorderColor(from.colour.darker(130));
    set->setSelectedColor(kBestColour);
    for (double v : from.values) set->append(v);
    if (k == b.best_set && b.best_category >= 0) set->selectBar(b.best_category);
    series->append(set);
    legend.push_back({from.label, from.full, LegendItem::Sample::Box, QPen(from.colour), 0});
  }
  const bool best_drawn = b.best_set >= 0 && b.best_category >= 0 && b.best_set < int(b.sets.size()) &&
                          b.best_category < int(b.sets[std::size_t(b.best_set)].values.size()) &&
                          b.sets[std::size_t(b.best_set)].values[std::size_t(b.best_category)] > 0;
  if (best_drawn)
    legend.push_back({QObject::tr("best"), QObject::tr("the best configuration"), LegendItem::Sample::Box, QPen(kBestColour), 0});
  series->setBarWidth(0.8);
  chart->addSeries(series);
  QObject::connect(series, &QBarSeries::hovered, series, [b, series](bool state, int index, QBarSet* set) {
    const int k = int(series->barSets().indexOf(set));
    if (!state || index < 0 || k < 0 || k >= int(b.sets.size())) {
      QToolTip::hideText();
      return;
    }
    const auto& tips = b.sets[std::size_t(k)].tips;
    if (index < int(tips.size())) QToolTip::showText(QCursor::pos(), tips[std::size_t(index)]);
  });

  x->clear();
  x->append(b.categories);
  // No categories yet: no title either (Qt Charts draws it loose above the plot).
  x->setTitleText(b.categories.isEmpty() ? QString() : b.x_title);
  y->setTitleText(b.y_title);
  for (QAbstractAxis* a : std::initializer_list<QAbstractAxis*>{x, y}) {
    QFont f = a->titleFont();
    f.setPointSizeF(9);
    f.setBold(false);
    a->setTitleFont(f);
    QFont lf = a->labelsFont();
    lf.setPointSizeF(9);
    a->setLabelsFont(lf);
  }
  y->setGridLineColor(QColor(0xe0, 0xe0, 0xe0));
  if (new_axes) {
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
  }
  series->attachAxis(x);
  series->attachAxis(y);
  // From zero to a whole tick above the tallest bar, as many ticks as the chart's height holds.
  set_axis(chart, y, {.lo = 0, .hi = b.y_max, .step = nice_step(b.y_max, 5), .floor = 0, .ceil = b.y_ceil});
  ChartLegend::set(chart, std::move(legend), names);
}

void render_sweep_chart(const SweepBars& bars, QPainter& painter, const QRectF& target) {
  render_chart_offscreen([&](QChart* chart) { fill_sweep_chart(chart, bars, LegendNames::Full); }, painter, target);
}

}  // namespace mb
