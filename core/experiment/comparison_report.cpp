// The comparison of one run with its baseline, and its plain-text rendering.
#include "experiment/comparison_report.h"

#include <cmath>

#include <fmt/format.h>

namespace mb {

namespace {

std::string percent(double fraction, int decimals) { return fmt::format("{:.{}f} %", fraction * 100.0, decimals); }

// 0.42 -> "-42.0 %": the change of the epoch time (a reduction is a minus), as the GUI writes it.
std::string change(double reduction) {
  const std::string number = fmt::format("{:.1f}", std::fabs(reduction * 100.0));
  if (number == "0.0") return "+-0.0 %";
  return (reduction > 0 ? "-" : "+") + number + " %";
}

std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

std::string describe(const RunRecord& r) {
  return fmt::format("{} ({}{}, {})", r.id, devices_label(r.config), r.config.simulated ? ", simulated" : "",
                     to_string(r.status));
}

}  // namespace

RunComparison compare_runs(const RunRecord& baseline, const RunRecord& run) {
  RunComparison c;
  c.key = describe_baseline_key(run.config);
  c.baseline = baseline;
  c.run_is_baseline = baseline.id == run.id;
  if (c.run_is_baseline) return c;
  c.time = compare_epoch_time(baseline, run);
  if (criteria_apply(run)) c.verdict = judge_reference(baseline, run);
  c.diagnosis = diagnose(run, &baseline, nullptr);
  return c;
}

RunComparison compare_with_baseline(std::span<const RunRecord> runs, const BaselineBook& book, const RunRecord& run) {
  if (const RunRecord* b = baseline_of(runs, book, run)) return compare_runs(*b, run);
  RunComparison c;
  c.key = describe_baseline_key(run.config);
  return c;
}

RunComparison compare_with_baseline(const RunStore& store, const RunRecord& run, std::vector<std::string>* warnings) {
  RunStore::Loaded loaded = store.load_runs();
  const BaselineBook book = store.load_book(&loaded.warnings);
  if (warnings) warnings->insert(warnings->end(), loaded.warnings.begin(), loaded.warnings.end());
  return compare_with_baseline(loaded.runs, book, run);
}

std::string comparison_text(const RunRecord& run, const RunComparison& c) {
  std::string out = fmt::format("run {}\n", describe(run));
  if (!c.baseline) {
    out += fmt::format("no single-device baseline for {}: run one device with these settings first\n", c.key);
    return out;
  }
  if (c.run_is_baseline) {
    out += fmt::format("this run is the baseline for {}\n", c.key);
    return out;
  }
  out += fmt::format("baseline {} for {}\n", describe(*c.baseline), c.key);
  if (c.time) {
    out += fmt::format("mean epoch time {:.2f} s -> {:.2f} s: {} (speedup {:.2f}x)\n", c.time->baseline_s,
                       c.time->run_s, change(c.time->reduction), c.time->speedup);
  } else {
    out += "mean epoch time: no finished epoch to compare\n";
  }
  if (!run.epochs.empty()) {
    out += fmt::format("final validation accuracy {}", percent(run.epochs.back().val_acc, 2));
    if (!c.baseline->epochs.empty())
      out += fmt::format(" (baseline {})", percent(c.baseline->epochs.back().val_acc, 2));
    out += "\n";
  }
  if (c.verdict) {
    const ReferenceVerdict& v = *c.verdict;
    out += v.is_classic_task()
               ? fmt::format("classic task criteria ({}):\n", v.mode)
               : fmt::format("criteria of the classic task ({}; these settings differ from it: {}):\n", v.mode,
                             join(v.differences, ", "));
    out += fmt::format("  time per epoch reduced by >= {:.0f} %: {} ({})\n", ReferenceVerdict::kMinReduction * 100,
                       v.time_ok ? "yes" : "no", v.time ? change(v.time->reduction) : std::string("-"));
    out += fmt::format("  validation accuracy above {:.0f} %: {} ({})\n", ReferenceVerdict::kMinValAcc * 100,
                       v.acc_ok ? "yes" : "no", percent(v.val_acc, 2));
  }
  if (const std::string bound = diagnosis_text(c.diagnosis, run); !bound.empty())
    out += fmt::format("what bounds it: {}\n", bound);
  if (const std::string noise = noise_text(c.diagnosis); !noise.empty()) out += noise + "\n";
  if (!run.replicas_in_sync) out += "replicas diverged: the run's parameters differ between devices\n";
  return out;
}

}  // namespace mb
