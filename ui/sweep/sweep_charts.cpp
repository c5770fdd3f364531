// Sweep bar charts (see sweep_charts.h).
#include "sweep/sweep_charts.h"

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

namespace mb {

QString sweep_chart_name(SweepChart kind) {
  switch (kind) {
    case SweepChart::EpochTime: return QStringLiteral("sweep-epoch-time");
    case SweepChart::Accuracy: return QStringLiteral("sweep-accuracy");
    case SweepChart::TimeToTarget: return QStringLiteral("sweep-time-to-target");
  }
  return {};
}

namespace {

// A round axis top above the largest bar, so the ticks read 0, 0.5, 1.0 ... not 0.37.
double nice_top(double v) {
  if (!(v > 0)) return 1;
  const double step = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0})
    if (m * step >= v * 1.08) return m * step;
  return 10 * step;
}

}  // namespace

SweepBars sweep_bars(SweepChart kind, const SweepProgress& progress) {
  SweepBars b;
  const SweepOptions& o = progress.options();
  const QString target = format_percent(o.target_val_acc, 1);
  switch (kind) {
    case SweepChart::EpochTime:
      b.title = QObject::tr("Time per epoch (s)");
      b.y_title = QObject::tr("lower is better");
      break;
    case SweepChart::Accuracy:
      b.title = QObject::tr("Validation accuracy (%)");
      b.y_title = QObject::tr("last epoch");
      break;
    case SweepChart::TimeToTarget:
      b.title = QObject::tr("Time to %1 (s)").arg(target) +
                chart_headline(QObject::tr("no bar: not reached"), QStringLiteral("#777777"), 8.5);
      b.y_title = QObject::tr("lower is better");
      break;
  }
  std::vector<int64_t> batches;
  for (const auto& p : progress.points())
    if (std::find(batches.begin(), batches.end(), p.global_batch) == batches.end()) batches.push_back(p.global_batch);
  std::map<std::pair<int64_t, bool>, SweepProgress::Row> by_point;
  for (const auto& row : progress.rows()) by_point[{row.point.global_batch, row.point.scale_lr}] = row;

  auto value = [&](const SweepProgress::Row& row) -> double {
    if (!row.result) return 0;
    switch (kind) {
      case SweepChart::EpochTime: return row.result->epoch_s;
      case SweepChart::Accuracy: return 100 * row.result->val_acc;
      case SweepChart::TimeToTarget: return row.result->time_to_target_s ? *row.result->time_to_target_s : 0;
    }
    return 0;
  };
  auto tip = [&](const SweepProgress::Row& row, bool same_run) {
    QString t = QStringLiteral("<b>%1</b> (lr %2)").arg(point_label(row.point)).arg(row.point.lr, 0, 'g', 4);
    if (same_run) t += QObject::tr("<br>the same run as batch %1 fixed: the rule changes nothing here").arg(row.point.global_batch);
    if (!row.result) return t + QObject::tr("<br>not run yet");
    const SweepResult& r = *row.result;
    t += QObject::tr("<br>time per epoch %1<br>validation accuracy %2").arg(format_seconds(r.epoch_s), format_percent(r.val_acc, 2));
    t += r.time_to_target_s ? QObject::tr("<br>%1 reached after %2 (epoch %3)")
                                  .arg(target, format_seconds(*r.time_to_target_s))
                                  .arg(*r.epochs_to_target)
                            : QObject::tr("<br>%1 not reached").arg(target);
    if (row.state == SweepProgress::RowState::Running) t += QObject::tr("<br><i>running</i>");
    if (row.best) t += QObject::tr("<br><b>the best configuration</b>");
    return t;
  };
  double top = 0;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    b.categories << QString::number(batches[i]);
    const auto fixed = by_point.find({batches[i], false});
    auto scaled = by_point.find({batches[i], true});
    // At the reference batch the rule changes nothing: one run stands for both bars.
    const bool same_run = scaled == by_point.end() && fixed != by_point.end();
    if (same_run) scaled = fixed;
    const SweepProgress::Row none;
    const SweepProgress::Row& f = fixed != by_point.end() ? fixed->second : none;
    const SweepProgress::Row& s = scaled != by_point.end() ? scaled->second : none;
    b.fixed.push_back(value(f));
    b.scaled.push_back(value(s));
    b.fixed_tips.push_back(tip(f, false));
    b.scaled_tips.push_back(tip(s, same_run));
    top = std::max({top, b.fixed.back(), b.scaled.back()});
    if (f.best) b.best_category = int(i), b.best_scaled = false;
    else if (s.best && !same_run) b.best_category = int(i), b.best_scaled = true;
  }
  b.y_max = kind == SweepChart::Accuracy ? 100 : nice_top(top);
  return b;
}

void fill_sweep_chart(QChart* chart, const SweepBars& b) {
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
  chart->setMargins(QMargins(4, 2, 4, 2));
  chart->setTitle(b.title);
  QFont title_font = chart->titleFont();
  title_font.setPointSizeF(11);
  title_font.setBold(true);
  chart->setTitleFont(title_font);
  chart->legend()->setAlignment(Qt::AlignBottom);
  QFont legend_font = chart->legend()->font();
  legend_font.setPointSizeF(9);
  chart->legend()->setFont(legend_font);

  auto* fixed = new QBarSet(QObject::tr("lr fixed"));
  auto* scaled = new QBarSet(QObject::tr("lr scaled with the batch"));
  fixed->setColor(kFixedLrColour);
  fixed->setBorderColor(kFixedLrColour.darker(130));
  scaled->setColor(kScaledLrColour);
  scaled->setBorderColor(kScaledLrColour.darker(130));
  for (QBarSet* set : {fixed, scaled}) set->setSelectedColor(kBestColour);
  for (std::size_t i = 0; i < b.fixed.size(); ++i) {
    fixed->append(b.fixed[i]);
    scaled->append(b.scaled[i]);
  }
  if (b.best_category >= 0) (b.best_scaled ? scaled : fixed)->selectBar(b.best_category);
  auto* series = new QBarSeries;
  series->append(fixed);
  series->append(scaled);
  series->setBarWidth(0.8);
  chart->addSeries(series);
  QObject::connect(series, &QBarSeries::hovered, series, [b](bool state, int index, QBarSet* set) {
    if (!state || index < 0) {
      QToolTip::hideText();
      return;
    }
    const bool is_fixed = set->label() == QObject::tr("lr fixed");
    const auto& tips = is_fixed ? b.fixed_tips : b.scaled_tips;
    if (index < int(tips.size())) QToolTip::showText(QCursor::pos(), tips[std::size_t(index)]);
  });

  x->clear();
  x->append(b.categories);
  x->setTitleText(QObject::tr("global batch"));
  y->setRange(0, b.y_max);
  y->setTickCount(6);
  y->setLabelFormat(b.y_max >= 20 ? "%.0f" : b.y_max >= 2 ? "%.1f" : "%.2f");
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
}

void render_sweep_chart(const SweepBars& bars, QPainter& painter, const QRectF& target) {
  render_chart_offscreen([&](QChart* chart) { fill_sweep_chart(chart, bars); }, painter, target);
}

}  // namespace mb
