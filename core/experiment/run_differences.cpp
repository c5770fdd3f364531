// The settings two runs can differ in, compared one by one (see run_differences.h).
#include "experiment/run_differences.h"

#include <filesystem>
#include <functional>

#include <fmt/format.h>

#include "config/train_options.h"

namespace mb {

namespace {

// "60,000": the words are English, whatever the locale (as experiment/verdict's differences).
std::string grouped(int64_t n) {
  const std::string digits = std::to_string(n);
  const std::size_t sign = n < 0 ? 1 : 0;
  std::string out = digits.substr(0, sign);
  for (std::size_t i = sign; i < digits.size(); ++i) {
    if (i > sign && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string count_of(int64_t n, const char* one, const char* many) {
  return fmt::format("{} {}", grouped(n), n == 1 ? one : many);
}

using Text = std::function<std::string(const RunConfig&)>;

// One setting: how a run reads in it, and what is compared (its words, unless two values can
// read alike: a link's latency is not in its tag). When two runs differ in the value but read
// alike, `detail` tells them apart ("simulated_link 10:25" against "simulated_link 10:50").
struct Setting {
  std::string name;
  Text words;
  Text value;             // empty: the words
  Text detail;            // empty: the name and the value
  bool what_if = false;   // a departure from plain training (the model, the scenario's fields)
};

std::string batch_words(const RunConfig& c) {
  // One replica in per-replica mode trains the same batches as in global mode.
  return c.per_replica_batch_mode && c.replicas > 1 ? fmt::format("{} per replica", grouped(c.per_replica_batch))
                                                    : fmt::format("batch {}", grouped(c.global_batch));
}

std::string learning_rate_words(const RunConfig& c) {
  // Scaling with one replica changes nothing, so it is not a difference.
  return fmt::format("lr {:g}{}", c.learning_rate, c.scale_lr && c.replicas > 1 ? " scaled" : "");
}

// CPU replicas are told apart by their count; GPUs by which ones (and whether several replicas
// share one).
std::string devices_words(const RunConfig& c) {
  if (c.device_kind() == DeviceKind::Cpu) return "CPU";
  return c.devices_text() + (c.simulated ? " (simulated)" : "");
}

std::string folder_name(const RunConfig& c) {
  const std::filesystem::path p(c.data_dir);
  const std::string name = p.filename().string();
  return name.empty() ? p.parent_path().filename().string() : name;
}

// The settings in the order the words are written: what the run ran on, what it trained, on
// which data, with which kernels and what-ifs, and the seed last. The scenario's and the
// engines' settings are the option table's rows, so a new row is compared without a change here.
std::vector<Setting> make_settings() {
  std::vector<Setting> s = {
      {"replicas", replicas_words, {}, {}},
      {"devices", devices_words, {}, {}},
      {"processes", [](const RunConfig& c) { return count_of(c.processes, "process", "processes"); }, {}, {}},
      {"model", [](const RunConfig& c) { return c.model.name(); }, {}, {}, true},
      {"batch", batch_words, {}, {}},
      {"learning_rate", learning_rate_words, {}, {}},
      {"epochs", [](const RunConfig& c) { return count_of(c.epochs, "epoch", "epochs"); }, {}, {}},
      {"data", [](const RunConfig& c) { return c.dataset; },
       [](const RunConfig& c) { return c.dataset + '\n' + c.data_dir; }, [](const RunConfig& c) {
         return "data " + folder_name(c);
       }},
      {"train_size", [](const RunConfig& c) { return count_of(c.train_size, "image", "images"); }, {}, {}},
      {"val_size", [](const RunConfig& c) { return count_of(c.val_size, "val image", "val images"); }, {}, {}},
      {"backend", [](const RunConfig& c) { return std::string(to_string(c.backend)); }, {}, {}},
      {"precision", [](const RunConfig& c) { return std::string(to_string(c.precision)); }, {}, {}},
  };
  for (const TrainOption& o : train_options()) {
    const std::string key(o.key);
    if (o.is_scenario()) {
      const auto tag = o.scenario.tag;
      const auto format = o.scenario.format;
      s.push_back({key, [tag](const RunConfig& c) { return tag(c.scenario); },
                   [format](const RunConfig& c) { return format(c.scenario); }, {}, true});
    } else if (o.is_engine()) {
      const auto format = o.engine.format;
      s.push_back({key, [key, format](const RunConfig& c) { return key + ' ' + format(c.engine); }, {}, {}});
    }
  }
  s.push_back({"pace", [](const RunConfig& c) {
                 return c.step_delay_s > 0 ? fmt::format("teaching pace {:g} s", c.step_delay_s) : std::string();
               }, {}, {}});
  s.push_back({"time_phases", [](const RunConfig& c) { return c.time_phases ? std::string() : "no breakdown"; }, {}, {}});
  s.push_back({"seed", [](const RunConfig& c) { return fmt::format("seed {}", c.seed); }, {}, {}});
  return s;
}

const std::vector<Setting>& settings() {
  static const std::vector<Setting> s = make_settings();
  return s;
}

// How `a` and `b` differ in one setting (an empty `setting` when they do not).
RunDifference compare(const Setting& s, const RunConfig& a, const RunConfig& b) {
  const Text& value = s.value ? s.value : s.words;
  const std::string va = value(a), vb = value(b);
  if (va == vb) return {};
  RunDifference d{s.name, s.words(a), s.words(b)};
  if (d.first == d.second) {
    auto detail = [&](const RunConfig& c, const std::string& v) { return s.detail ? s.detail(c) : s.name + ' ' + v; };
    d.first = detail(a, va);
    d.second = detail(b, vb);
  }
  return d;
}

}  // namespace

std::string replicas_words(const RunConfig& c) { return count_of(c.replicas, "replica", "replicas"); }

std::vector<RunDifference> run_differences(const RunConfig& a, const RunConfig& b) {
  std::vector<RunDifference> out;
  for (const Setting& s : settings())
    if (RunDifference d = compare(s, a, b); !d.setting.empty()) out.push_back(std::move(d));
  return out;
}

std::vector<std::vector<std::string>> distinguishing_words(std::span<const RunConfig* const> runs, bool what_ifs) {
  std::vector<std::vector<std::string>> words(runs.size());
  for (const Setting& s : settings()) {
    for (std::size_t i = 0; i < runs.size(); ++i) {
      // Each run reads as it does against the first run it differs from in this setting (the
      // words of most settings do not depend on the other run; a detail does), or against
      // plain training for a what-if.
      RunDifference d;
      for (std::size_t j = 0; j < runs.size() && d.setting.empty(); ++j)
        if (i != j) d = compare(s, *runs[i], *runs[j]);
      if (d.setting.empty() && what_ifs && s.what_if) {
        RunConfig plain = *runs[i];
        plain.model = RunConfig{}.model;
        plain.scenario = Scenario{};
        d = compare(s, *runs[i], plain);
      }
      if (!d.setting.empty() && !d.first.empty()) words[i].push_back(d.first);
    }
  }
  return words;
}

}  // namespace mb
