// Baseline keys and the one place that decides which run is a baseline.
#include "experiment/baseline.h"

#include <unordered_map>

#include <fmt/format.h>

#include "model/model_text.h"
#include "config/train_options.h"

namespace mb {

namespace {

// The key's words: "cuda" for GPU runs, "cpu" for CPU runs.
std::string_view device_kind(const RunConfig& c) { return to_string(c.device_kind()); }

int64_t compared_batch(const RunConfig& c) {
  return c.per_replica_batch_mode && c.replicas > 1 ? c.per_replica_batch : c.global_batch;
}

}  // namespace

std::string baseline_key(const RunConfig& c) {
  return fmt::format("{}|{}|{}|{}|{}|{}", c.dataset, c.train_size, model_text(c.model), compared_batch(c), device_kind(c),
                     to_string(c.backend));
}

std::string describe_baseline_key(const RunConfig& c) {
  return fmt::format("{} ({} training images), {}, batch {}, {} ({})", c.dataset, c.train_size, c.model.name(),
                     compared_batch(c), device_kind(c), to_string(c.backend));
}

bool can_be_baseline(const RunRecord& r) {
  // A run at teaching pace spent most of its epochs waiting on purpose, and a run with any
  // scenario field on (a simulated straggler or link measures the demonstration, not the
  // device; balanced shares sum other partial sums) is no yardstick.
  return r.config.replicas == 1 && r.status == RunStatus::Completed && !r.epochs.empty() &&
         r.config.step_delay_s == 0 && is_plain(r.config.scenario);
}

std::optional<std::size_t> BaselineIndex::for_config(const RunConfig& config) const {
  const auto it = by_key.find(baseline_key(config));
  if (it == by_key.end()) return std::nullopt;
  return it->second;
}

BaselineIndex index_baselines(std::span<const RunRecord> runs, const BaselineBook& book) {
  BaselineIndex index;
  std::vector<std::string> keys;
  keys.reserve(runs.size());
  for (const auto& r : runs) keys.push_back(baseline_key(r.config));
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (!can_be_baseline(runs[i])) continue;
    auto [it, fresh] = index.by_key.try_emplace(keys[i], i);
    if (!fresh && runs[i].config.start_time >= runs[it->second].config.start_time) it->second = i;
  }
  // Pins on top. A pin names a run by id; the first run with that id is the one (ids are
  // unique in a store, where they are the file names).
  std::unordered_map<std::string, std::size_t> position_of_id;
  for (std::size_t i = 0; i < runs.size(); ++i) position_of_id.try_emplace(runs[i].id, i);
  for (const auto& [key, id] : book.pins) {
    // A pinned run whose scenario changes the math (balanced shares) is no lock-step run's
    // baseline: the pin is ignored.
    if (auto it = position_of_id.find(id); it != position_of_id.end() && !changes_math(runs[it->second].config.scenario))
      index.by_key[key] = it->second;
  }
  index.of_run.assign(runs.size(), std::nullopt);
  index.kept.assign(runs.size(), false);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (auto it = index.by_key.find(keys[i]); it != index.by_key.end()) index.of_run[i] = it->second;
    if (index.of_run[i] == i) continue;   // the baseline of its key now
    // The baseline it was compared with, while it is still there and still one of its key.
    const auto was = book.compared.find(runs[i].id);
    if (was == book.compared.end()) continue;
    const auto at = position_of_id.find(was->second);
    if (at != position_of_id.end() && at->second != i && can_be_baseline(runs[at->second]) &&
        keys[at->second] == keys[i]) {
      index.of_run[i] = at->second;
      index.kept[i] = true;
    }
  }
  return index;
}

const RunRecord* find_baseline(std::span<const RunRecord> runs, const BaselineBook& book, const RunConfig& config) {
  const std::optional<std::size_t> i = index_baselines(runs, book).for_config(config);
  return i ? &runs[*i] : nullptr;
}

const RunRecord* baseline_of(std::span<const RunRecord> runs, const BaselineBook& book, const RunRecord& run) {
  const BaselineIndex index = index_baselines(runs, book);
  for (std::size_t i = 0; i < runs.size(); ++i)
    if (runs[i].id == run.id) return index.of_run[i] ? &runs[*index.of_run[i]] : nullptr;
  const std::optional<std::size_t> i = index.for_config(run.config);
  return i ? &runs[*i] : nullptr;
}

void pin_baseline(BaselineBook& book, std::span<const RunRecord> runs, const RunRecord& baseline) {
  const std::string key = baseline_key(baseline.config);
  book.pins[key] = baseline.id;
  for (const RunRecord& r : runs)
    if (r.id != baseline.id && baseline_key(r.config) == key) book.compared[r.id] = baseline.id;
}

}  // namespace mb
