// The breakdown and the timeline as bar chart descriptions (see breakdown.h).
#include "insight/breakdown.h"

#include <QObject>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/backend.h"
#include "charts/chart_content.h"
#include "common/format.h"
#include "records/chrome_trace.h"
#include "util/error.h"

namespace mb {

namespace {

constexpr int kMaxBars = 40;            // per chart: bars stay wider than their labels at 1280 px
constexpr int kMaxEpochGroups = 8;

bool is_gpu_run(const RunConfig& c) { return c.device_kind() == DeviceKind::Cuda; }

bool timed(const std::vector<PhaseTimes>& times, int replicas) {
  if (int(times.size()) != replicas) return false;
  return std::any_of(times.begin(), times.end(), [](const PhaseTimes& t) { return t.compute_s() > 0; });
}

QString ms(double s) { return QStringLiteral("%1 ms").arg(s * 1e3, 0, 'f', s < 0.01 ? 2 : 1); }
QString secs(double s) { return s < 1 ? ms(s) : format_seconds(s); }

QString replica_name(const RunConfig& c, int r) {
  const Straggler& slow = c.scenario.straggler;
  return r == slow.replica ? QObject::tr("replica %1 (simulated straggler \u00d7%2)").arg(r).arg(slow.factor, 0, 'g', 3)
                             : QObject::tr("replica %1").arg(r);
}

// A value axis from zero to a whole number of nice ticks above `max`.
void fit_values(BarChartContent& c, double max, double scale) {
  const double top = std::max(max * scale * 1.06, 1e-9);
  const double step = nice_step(top, 5);
  c.value_scale = scale;
  c.value_tick = step / scale;
  c.value_max = std::ceil(top / step - 1e-9) * step / scale;
  c.value_decimals = decimals_for(step);
}

QString word(std::string_view text) { return QString::fromUtf8(text.data(), qsizetype(text.size())); }

// The tooltip's lines: compute with its parts, each other part of the step, and what was
// measured beside it (the CPU time while computing, as a share of the compute's wall time).
QString breakdown_detail(const PhaseTimes& t) {
  const auto categories = time_categories();
  QStringList parts;
  for (std::size_t i = 0; i < categories.size(); ++i)
    if (categories[i].role == TimeRole::Compute) parts << QStringLiteral("%1 %2").arg(word(categories[i].label), secs(t[int(i)]));
  QString detail = QObject::tr("<br>compute %1 (%2)").arg(secs(t.compute_s()), parts.join(QStringLiteral(" · ")));
  for (std::size_t i = 0; i < categories.size(); ++i) {
    const TimeCategory& c = categories[i];
    if (c.role == TimeRole::Compute) continue;
    if (c.role == TimeRole::Beside) {
      if (t[int(i)] <= 0) continue;
      if (c.unit == "CPU s" && t.compute_s() > 0)
        detail += QObject::tr("<br>%1 %2 CPU s (%3 of the compute's wall time)")
                      .arg(word(c.legend), QString::number(t[int(i)], 'f', 2), format_percent(t[int(i)] / t.compute_s(), 0));
      else if (c.unit != "CPU s")
        detail += QObject::tr("<br>%1 %2 (beside the step, not in the bar)").arg(word(c.legend), secs(t[int(i)]));
      continue;
    }
    detail += QStringLiteral("<br>%1 %2").arg(word(c.legend), secs(t[int(i)]));
  }
  return detail;
}

// Waiting for input is in a legend only where an input pipeline ran (a legend of a plain run
// lists what its bars can show).
bool shown_with(const TimeCategory& c, bool input_pipeline) { return c.role != TimeRole::Input || input_pipeline; }

// The parts of a step other than compute, as the breakdown stacks them: by role (the order of
// TimeRole: communication, waiting, then waiting for input), then in the table's order.
std::vector<int> stacked_categories() {
  std::vector<int> out;
  const auto categories = time_categories();
  for (TimeRole role : {TimeRole::Communication, TimeRole::Waiting, TimeRole::Input})
    for (std::size_t i = 0; i < categories.size(); ++i)
      if (categories[i].role == role) out.push_back(int(i));
  return out;
}

// Bottom up: compute (its categories as one), then every other part of the step
// (stacked_categories), each in its colour.
Bar breakdown_bar(const RunConfig& c, int r, const PhaseTimes& t, const QString& what) {
  Bar bar;
  const bool slow = r == c.scenario.straggler.replica;
  bar.label = slow ? QObject::tr("r%1 slow").arg(r) : QStringLiteral("r%1").arg(r);
  bar.marked = slow;
  const QString head = QStringLiteral("<b>%1</b>, %2: %3").arg(replica_name(c, r).toHtmlEscaped(), what, secs(t.total()));
  const QString tip = head + breakdown_detail(t);
  double at = 0;
  auto add = [&](double length, const QColor& colour, const QString& name) {
    bar.segments.push_back({at, length, colour, name, tip});
    at += length;
  };
  add(t.compute_s(), compute_colour(), QObject::tr("compute"));
  for (int k : stacked_categories()) {
    const TimeRole role = time_categories()[std::size_t(k)].role;
    if (role == TimeRole::Input && t[k] <= 0) continue;   // no input pipeline ran
    add(t[k], category_colour(k), role_word(role));
  }
  return bar;
}

QString gpu_text(const RunRecord& r) {
  QString text = QObject::tr("GPU replicas: the host does not time a GPU step phase by phase (timing it would stop the "
                             "GPU from running ahead), so there are no honest compute and waiting bars to draw.");
  if (r.comm.measured())
    text += QObject::tr(" Measured in the warm-up: the all-reduce of %1 adds %2 to every step (exposed, after "
                        "overlapping with backward); bus bandwidth %3 GB/s.")
                .arg(QStringLiteral("%1 MB").arg(r.comm.bytes / 1e6, 0, 'f', 2), ms(r.comm.exposed_s))
                .arg(r.comm.busbw_gbs, 0, 'f', 1);
  else if (r.config.replicas > 1)
    text += QObject::tr(" The all-reduce's cost, measured in the warm-up, is shown here once the run ends.");
  return text;
}

QString untimed_text(const RunRecord& r) {
  for (const auto& e : r.epochs) {
    if (!e.replica_times.empty())
      return QObject::tr("This run did not time its phases (mirrorbench-cli train --no-breakdown).");
  }
  return QObject::tr("This run's record holds no per-replica breakdown: it was recorded before mirrorbench kept one.");
}

// "compute 86 % · communication 9 % · waiting 5 %" of all replicas' time together, by role;
// with overlap (--bucket-mb), the exchange the backward pass hid, which is not in those shares.
QString shares(const std::vector<PhaseTimes>& times) {
  PhaseTimes sum;
  for (const auto& t : times) sum += t;
  const double total = std::max(1e-12, sum.total());
  QStringList parts;
  for (TimeRole role : {TimeRole::Compute, TimeRole::Communication, TimeRole::Waiting})
    parts << QStringLiteral("%1 %2").arg(role_word(role), format_percent(sum.of(role) / total, 0));
  if (const double input = sum.of(TimeRole::Input); input > 0)   // only where a pipeline ran
    parts << QStringLiteral("%1 %2").arg(role_word(TimeRole::Input), format_percent(input / total, 0));
  if (const double hidden = sum[phase::HiddenAllReduce]; hidden > 0 && !times.empty())
    parts << QObject::tr("%1 more hidden under backward").arg(secs(hidden / double(times.size())));
  return parts.join(QStringLiteral(" · "));
}

// The share of the replicas' time spent waiting; a straggler's own time is left out (it is
// the one waited for).
double waiting_share(const RunConfig& cfg, const std::vector<PhaseTimes>& times) {
  double wait = 0, total = 0;
  for (std::size_t k = 0; k < times.size(); ++k) {
    if (int(k) == cfg.scenario.straggler.replica && times.size() > 1) continue;
    wait += times[k].of(TimeRole::Waiting);
    total += times[k].total();
  }
  return wait / std::max(1e-12, total);
}

// The run on display's counterpart in the other mode (lock-step or balanced shares, the
// devices, straggler, batch and kernels the same) among the shown runs, as " · lock-step: 33 %
// waiting": the headline then shows what balancing changed (the Lock-step vs balanced demo
// shows both runs).
QString other_mode_text(const std::vector<ShownRun>& runs, const ShownRun& primary) {
  const RunConfig& mine = primary.record.config;
  for (const ShownRun& s : runs) {
    const RunConfig& c = s.record.config;
    if (&s == &primary || c.scenario.balanced() == mine.scenario.balanced() || c.devices != mine.devices ||
        c.scenario.straggler != mine.scenario.straggler || c.global_batch != mine.global_batch || c.backend != mine.backend)
      continue;
    for (auto e = s.record.epochs.rbegin(); e != s.record.epochs.rend(); ++e) {
      if (!timed(e->replica_times, std::max(1, c.replicas))) continue;
      return QObject::tr(" · %1: %2 waiting")
          .arg(c.scenario.balanced() ? QObject::tr("balanced") : QObject::tr("lock-step"),
               format_percent(waiting_share(c, e->replica_times), 0));
    }
  }
  return {};
}

// The breakdown's headline: the newest epoch's shares, or what the straggler does to the
// others, and the other mode's waiting where it is shown.
void set_headline(BarChartContent& c, const std::vector<ShownRun>& runs, const ShownRun& primary,
                  const std::vector<PhaseTimes>& newest, const QString& when) {
  const RunConfig& cfg = primary.record.config;
  const int n = std::max(1, cfg.replicas);
  if (n == 1) {
    c.headline = QObject::tr("%1: one device computes alone, nothing to exchange or wait for").arg(primary.label);
    return;
  }
  const QString other = other_mode_text(runs, primary);
  if (cfg.scenario.straggler.on() && cfg.scenario.straggler.replica < n) {
    c.headline = QObject::tr("%1: the others wait %2 of their time for it (%3)%4")
                     .arg(straggler_text(cfg), format_percent(waiting_share(cfg, newest), 0), when, other);
    c.headline_colour = QColor(0xb7, 0x1c, 0x1c);
    return;
  }
  c.headline = QObject::tr("%1, %2: %3%4").arg(primary.label, when, shares(newest), other);
}

}  // namespace

QColor compute_colour() { return QColor(0x3d, 0x7e, 0xbf); }
QColor communication_colour() { return QColor(0xf2, 0x8e, 0x2b); }
QColor waiting_colour() { return QColor(0xb4, 0xab, 0xa6); }
QColor input_colour() { return QColor(0x8e, 0x44, 0xad); }

QColor category_colour(int category) {
  const auto categories = time_categories();
  if (category < 0 || category >= int(categories.size())) return QColor(0x88, 0x88, 0x88);
  switch (categories[std::size_t(category)].colour) {
    case ColourRole::ComputeLight: return QColor(0x8f, 0xbc, 0xe6);
    case ColourRole::Compute: return compute_colour();
    case ColourRole::ComputeDark: return QColor(0x1d, 0x3f, 0x72);
    case ColourRole::Communication: return communication_colour();
    case ColourRole::Waiting: return waiting_colour();
    case ColourRole::Input: return input_colour();
    case ColourRole::CpuTime: return QColor(0x2e, 0x7d, 0x32);
    case ColourRole::Extra: break;
  }
  // A category without a colour of its own: one of a few distinct hues, by position.
  static const QColor extra[] = {QColor(0x16, 0xa0, 0x85), QColor(0xc0, 0x39, 0x2b), QColor(0x7f, 0x8c, 0x8d)};
  return extra[std::size_t(category) % std::size(extra)];
}

QString role_word(TimeRole role) {
  switch (role) {
    case TimeRole::Compute: return QObject::tr("compute");
    case TimeRole::Communication: return QObject::tr("communication");
    case TimeRole::Waiting: return QObject::tr("waiting");
    case TimeRole::Input: return QObject::tr("waiting for input");
    case TimeRole::Beside: return QObject::tr("beside the step");
  }
  return {};
}

LiveEpoch live_epoch(const StepProgress& p) { return LiveEpoch{p.epoch, p.step, p.steps, p.epoch_times}; }

TimelineSource timeline_from_progress(const StepProgress& p, const RunConfig& config) {
  TimelineSource s;
  s.run_id = "live";
  s.config = config;
  s.live = true;
  s.steps_per_report = std::max(1, p.steps_per_report);
  s.steps_in_epoch = p.steps;
  const int64_t k_max = int64_t(p.recent.size());
  for (int64_t k = 0; k < k_max; ++k) {
    TimelineStep step;
    step.epoch = p.epoch;
    step.step = p.step - (k_max - 1 - k) * s.steps_per_report;
    if (step.step <= 0 && p.steps > 0) {   // the reports reach back into the epoch before
      step.step += p.steps;
      step.epoch -= 1;
    }
    step.replicas = p.recent[std::size_t(k)];
    s.steps.push_back(std::move(step));
  }
  return s;
}

TimelineSource timeline_from_trace(const std::string& text, const RunRecord& record, int count) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw DataError(fmt::format("trace of run {}: {}", record.id, e.what()));
  }
  if (!j.is_object() || !j.contains("traceEvents") || !j.at("traceEvents").is_array())
    throw DataError(fmt::format("trace of run {}: no traceEvents", record.id));
  const int replicas = std::max(1, record.config.replicas);
  std::map<std::pair<int, int64_t>, std::vector<PhaseTimes>> steps;
  for (const auto& ev : j.at("traceEvents")) {
    if (!ev.is_object() || ev.value("ph", "") != "X" || !ev.contains("args")) continue;
    const int tid = ev.value("tid", -1);
    if (tid < 0 || tid >= replicas) continue;
    const auto& args = ev.at("args");
    const std::pair<int, int64_t> key{args.value("epoch", 0), args.value("step", int64_t(0))};
    auto& times = steps[key];
    times.resize(std::size_t(replicas));
    const double d = ev.value("dur", 0.0) * 1e-6;
    PhaseTimes& t = times[std::size_t(tid)];
    // The trace names each part of a step by its category's label.
    const std::string name = ev.value("name", "");
    const auto categories = time_categories();
    for (std::size_t i = 0; i < categories.size(); ++i)
      if (categories[i].label == name) t[int(i)] += d;
  }
  TimelineSource s;
  s.run_id = record.id;
  s.config = record.config;
  s.sampled = true;
  for (auto it = steps.begin(); it != steps.end(); ++it) {
    const auto next = std::next(it);
    if (next != steps.end() && next->first.first == it->first.first) {
      s.sample_every = std::max<int64_t>(1, next->first.second - it->first.second);
      break;
    }
  }
  auto from = steps.begin();
  std::advance(from, std::max<std::ptrdiff_t>(0, std::ptrdiff_t(steps.size()) - count));
  for (auto it = from; it != steps.end(); ++it) s.steps.push_back({it->first.first, it->first.second, it->second});
  return s;
}

BarChartContent build_breakdown(const std::vector<ShownRun>& runs, const LiveEpoch* live) {
  BarChartContent c;
  c.id = QStringLiteral("breakdown");
  c.title = QObject::tr("Where each replica's time goes");
  c.value_title = QObject::tr("s");
  c.legend = {{QObject::tr("compute"), compute_colour()}};
  const bool input = std::any_of(runs.begin(), runs.end(), [](const ShownRun& r) {
    return r.record.config.scenario.input.costs();
  });
  for (int k : stacked_categories())
    if (shown_with(time_categories()[std::size_t(k)], input))
      c.legend.push_back({word(time_categories()[std::size_t(k)].legend), category_colour(k)});
  const ShownRun* primary = primary_run(runs);
  if (!primary) {
    c.empty_text = QObject::tr("No run on display: press Run or Compare, or select a run in the history.");
    return c;
  }
  const RunRecord& r = primary->record;
  const RunConfig& cfg = r.config;
  const int n = std::max(1, cfg.replicas);
  c.headline = primary->label;
  if (is_gpu_run(cfg)) {
    c.empty_text = gpu_text(r);
    return c;
  }

  // The epochs to show: the last ones (and the one in progress), as many as stay legible.
  std::vector<const EpochMetrics*> epochs;
  for (const auto& e : r.epochs) {
    if (timed(e.replica_times, n)) epochs.push_back(&e);
  }
  const bool partial = primary->live && live && live->epoch > (r.epochs.empty() ? 0 : r.epochs.back().epoch) &&
                       timed(live->times, n);
  const ShownRun* base = baseline_of(runs, *primary);   // the one the card and the headers name
  if (base && is_gpu_run(base->record.config)) base = nullptr;
  std::vector<PhaseTimes> base_mean;
  if (base) {
    int k = 0;
    PhaseTimes sum;
    for (const auto& e : base->record.epochs) {
      if (!timed(e.replica_times, 1)) continue;
      sum += e.replica_times[0];
      ++k;
    }
    if (k > 0) base_mean.push_back(sum.scaled(1.0 / k));
  }
  const int room = std::clamp((kMaxBars - int(base_mean.size())) / n, 1, kMaxEpochGroups);
  const int finished_room = std::max(0, room - (partial ? 1 : 0));
  if (int(epochs.size()) > finished_room) epochs.erase(epochs.begin(), epochs.end() - finished_room);
  if (epochs.empty() && !partial) {
    c.empty_text = primary->live && r.epochs.empty()
                       ? QObject::tr("The first steps are on their way: the bars fill in as the epoch runs.")
                       : untimed_text(r);
    return c;
  }

  double most = 0;
  if (!base_mean.empty()) {
    BarGroup g;
    g.label = QObject::tr("baseline");
    Bar b = breakdown_bar(base->record.config, 0, base_mean[0], QObject::tr("%1, mean epoch").arg(base->label.toHtmlEscaped()));
    b.label = QString::fromStdString(base->record.config.devices_text());
    g.bars.push_back(std::move(b));
    most = std::max(most, base_mean[0].total());
    c.groups.push_back(std::move(g));
  }
  for (const EpochMetrics* e : epochs) {
    BarGroup g;
    g.label = QObject::tr("epoch %1").arg(e->epoch);
    for (int k = 0; k < n; ++k) {
      g.bars.push_back(breakdown_bar(cfg, k, e->replica_times[std::size_t(k)], QObject::tr("epoch %1").arg(e->epoch)));
      most = std::max(most, e->replica_times[std::size_t(k)].total());
    }
    c.groups.push_back(std::move(g));
  }
  if (partial) {
    BarGroup g;
    g.partial = true;
    g.label = QObject::tr("epoch %1 · %2/%3").arg(live->epoch).arg(live->step).arg(live->steps);
    for (int k = 0; k < n; ++k) {
      g.bars.push_back(breakdown_bar(cfg, k, live->times[std::size_t(k)],
                                     QObject::tr("epoch %1 so far (step %2 of %3)").arg(live->epoch).arg(live->step).arg(live->steps)));
      most = std::max(most, live->times[std::size_t(k)].total());
    }
    c.groups.push_back(std::move(g));
  }
  fit_values(c, most, 1.0);

  const std::vector<PhaseTimes>& newest = partial ? live->times : epochs.back()->replica_times;
  const QString when = partial ? QObject::tr("epoch %1 so far").arg(live->epoch) : QObject::tr("epoch %1").arg(epochs.back()->epoch);
  set_headline(c, runs, *primary, newest, when);
  return c;
}

BarChartContent build_timeline(const TimelineSource* source, const QString& label) {
  BarChartContent c;
  c.id = QStringLiteral("timeline");
  c.rows = true;
  c.title = QObject::tr("The last steps of every replica");
  c.value_title = QObject::tr("Time (ms) from the first step shown");
  const auto categories = time_categories();
  for (std::size_t p = 0; p < categories.size(); ++p)
    if (categories[p].role != TimeRole::Beside && shown_with(categories[p], source && source->config.scenario.input.costs()))
      c.legend.push_back({word(categories[p].label), category_colour(int(p))});
  if (!source) {
    c.headline = label;
    c.empty_text = label.isEmpty()
                       ? QObject::tr("No run on display.")
                       : QObject::tr("No timeline for this run: the window shows a run's last steps while it trains, and "
                                     "reads earlier runs' steps from the Chrome trace kept beside their record; this run "
                                     "kept none.");
    return c;
  }
  const RunConfig& cfg = source->config;
  const int n = std::max(1, cfg.replicas);
  c.headline = label;
  if (is_gpu_run(cfg)) {
    c.empty_text = QObject::tr("GPU replicas: the host does not time a GPU step phase by phase (timing it would stop the "
                               "GPU from running ahead), so there is no timeline of its phases to draw.");
    return c;
  }
  std::vector<const TimelineStep*> steps;
  for (const auto& s : source->steps) {
    if (timed(s.replicas, n)) steps.push_back(&s);
  }
  if (steps.empty()) {
    c.empty_text = source->steps.empty() ? QObject::tr("The first steps are on their way.")
                                         : QObject::tr("This run did not time its phases (mirrorbench-cli train --no-breakdown).");
    return c;
  }
  if (source->sampled) c.title = QObject::tr("Sampled steps of every replica, from the run's trace");

  // Sampled steps are not consecutive: a small gap between them says so.
  double mean_step = 0;
  for (const TimelineStep* s : steps) mean_step += s->replicas[0].total();
  mean_step /= double(steps.size());
  const double gap = source->sampled ? 0.04 * mean_step : 0.0;

  BarGroup g;
  double most = 0;
  for (int r = 0; r < n; ++r) {
    Bar bar;
    const bool slow = r == cfg.scenario.straggler.replica;
    bar.label = slow ? QObject::tr("replica %1 (straggler)").arg(r) : QObject::tr("replica %1").arg(r);
    bar.marked = slow;
    double at = 0;
    for (const TimelineStep* s : steps) {
      const PhaseTimes& t = s->replicas[std::size_t(r)];
      if (r == 0) {
        const bool first = c.marks.empty();
        const bool new_epoch = !first && s->epoch != steps[std::size_t(c.marks.size()) - 1]->epoch;
        QString mark = source->sampled || first || new_epoch
                           ? QObject::tr("e%1 s%2").arg(s->epoch).arg(s->step)
                           : QStringLiteral("s%1").arg(s->step);
        c.marks.push_back({at, mark});
      }
      const QString head = QObject::tr("<b>%1</b><br>epoch %2, step %3%4: %5")
                               .arg(replica_name(cfg, r).toHtmlEscaped())
                               .arg(s->epoch)
                               .arg(s->step)
                               .arg(source->steps_per_report > 1 ? QObject::tr(" (a block of %1 steps)").arg(source->steps_per_report)
                                                                 : QString())
                               .arg(ms(t.total()));
      for (const int k : step_order()) {
        const std::size_t p = std::size_t(k);
        const double d = t[k];
        if (d <= 0 || categories[p].role == TimeRole::Beside) continue;
        const QString name = word(categories[p].label);
        bar.segments.push_back({at, d, category_colour(int(p)), name,
                                head + QStringLiteral("<br>%1: <b>%2</b>").arg(name, ms(d))});
        at += d;
      }
      at += gap;
    }
    most = std::max(most, at - gap);
    g.bars.push_back(std::move(bar));
  }
  c.groups.push_back(std::move(g));
  fit_values(c, most, 1000.0);

  const TimelineStep& last = *steps.back();
  const TimelineStep& first = *steps.front();
  QString what;
  if (source->sampled) {
    what = source->sample_every > 1
               ? QObject::tr("one step in %1 sampled, the last %2 of them").arg(source->sample_every).arg(steps.size())
               : QObject::tr("every step kept, the last %1").arg(steps.size());
  } else {
    const QString range = first.epoch == last.epoch ? QObject::tr("epoch %1, steps %2–%3").arg(last.epoch).arg(first.step).arg(last.step)
                                                    : QObject::tr("epochs %1–%2, up to step %3").arg(first.epoch).arg(last.epoch).arg(last.step);
    what = source->live ? QObject::tr("live · %1").arg(range) : QObject::tr("its last steps · %1").arg(range);
    if (source->steps_in_epoch > 0) what += QObject::tr(" of %1").arg(source->steps_in_epoch);
  }
  if (source->steps_per_report > 1) what += QObject::tr(" · each block %1 steps").arg(source->steps_per_report);
  c.headline = label.isEmpty() ? what : QStringLiteral("%1: %2").arg(label, what);
  return c;
}

}  // namespace mb
