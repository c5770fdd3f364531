// Chrome trace writer (see chrome_trace.h). Times are microseconds, as the format wants.
#include "records/chrome_trace.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/atomic_file.h"

namespace mb {

std::string chrome_trace_json(const RunRecord& record, const std::vector<std::vector<TraceStep>>& traces) {
  using nlohmann::json;
  json events = json::array();
  const auto categories = time_categories();
  const std::vector<int> order = step_order();   // waiting for input before the forward pass
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 0},
                    {"args", {{"name", fmt::format("mirrorbench run {} ({})", record.id, record.config.devices_text())}}}});
  for (std::size_t r = 0; r < traces.size(); ++r) {
    std::string label = fmt::format("replica {}", r);
    if (int(r) == record.config.scenario.straggler.replica) label += " (simulated straggler)";
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", r}, {"args", {{"name", label}}}});
    events.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 0}, {"tid", r}, {"args", {{"sort_index", r}}}});
    for (const TraceStep& s : traces[r]) {
      double t = s.start_s;
      for (const int k : order) {
        const std::size_t p = std::size_t(k);
        const TimeCategory& c = categories[p];
        const double d = s.phases[int(p)];
        if (c.role == TimeRole::Beside) {
          events.push_back({{"name", fmt::format("{} {}", label, c.label)},
                            {"cat", "step"},
                            {"ph", "C"},
                            {"pid", 0},
                            {"ts", s.start_s * 1e6},
                            {"args", {{std::string(c.key) + "_ms", d * 1e3}}}});
          continue;
        }
        if (d > 0)
          events.push_back({{"name", c.label},
                            {"cat", "step"},
                            {"ph", "X"},
                            {"pid", 0},
                            {"tid", r},
                            {"ts", t * 1e6},
                            {"dur", d * 1e6},
                            {"args", {{"epoch", s.epoch}, {"step", s.step}}}});
        t += std::max(0.0, d);
      }
    }
  }
  json doc = {{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ms"},
              {"otherData", {{"run_id", record.id}, {"devices", record.config.devices_text()},
                             {"replicas", record.config.replicas}, {"processes", record.config.processes},
                             {"global_batch", record.config.global_batch}, {"balance", record.config.scenario.balanced()}}}};
  return doc.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

void write_chrome_trace(const std::filesystem::path& file, const RunRecord& record,
                        const std::vector<std::vector<TraceStep>>& traces) {
  write_file_atomic(file, chrome_trace_json(record, traces));
}

}  // namespace mb
