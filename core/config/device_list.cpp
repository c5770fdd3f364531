// The device-list syntax, parsed and written in one place.
#include "config/device_list.h"

#include <charconv>
#include <set>

#include <fmt/format.h>

#include "util/error.h"

namespace mb {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

constexpr int kOutOfRange = -2;

// A whole-string non-negative decimal; -1 for anything else (signs, spaces, junk), and
// kOutOfRange for digits too many for an int, so the message can say which it was.
int parse_count(std::string_view s) {
  int value = -1;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || s.front() == '-' || s.front() == '+' || end != s.data() + s.size()) return -1;
  if (ec == std::errc::result_out_of_range) return kOutOfRange;
  return ec == std::errc() ? value : -1;
}

}  // namespace

std::string_view to_string(DeviceKind kind) { return kind == DeviceKind::Cuda ? "cuda" : "cpu"; }

DeviceList parse_devices(std::string_view text) {
  const std::string_view all = trim(text);
  MB_CHECK(!all.empty(), ConfigError, "device list is empty: use cpu:N or cuda:I[,cuda:J...]");
  DeviceList out;
  bool any_cpu = false, any_cuda = false, any_local = false;
  std::string_view rest = all;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view entry = trim(rest.substr(0, comma));
    MB_CHECK(!entry.empty(), ConfigError, "device list '{}' has an empty entry", all);
    const std::size_t colon = entry.find(':');
    const std::string_view kind = entry.substr(0, colon);
    const bool has_index = colon != std::string_view::npos;
    const int number = has_index ? parse_count(entry.substr(colon + 1)) : -1;
    if (kind == "cpu") {
      // "cpu" = one replica; "cpu:N" = N replicas, one core each.
      const int replicas = has_index ? number : 1;
      MB_CHECK(replicas != kOutOfRange, ConfigError, "device '{}': the replica count is out of range (1..{})", entry,
               kMaxCpuReplicas);
      MB_CHECK(replicas >= 1, ConfigError, "device '{}': cpu:N needs a replica count N >= 1", entry);
      MB_CHECK(replicas <= kMaxCpuReplicas, ConfigError, "device '{}': at most {} CPU replicas are supported", entry,
               kMaxCpuReplicas);
      MB_CHECK(!any_cpu, ConfigError, "device list '{}': give the CPU replicas once, as cpu:N", all);
      any_cpu = true;
      for (int i = 0; i < replicas; ++i) out.push_back({DeviceKind::Cpu, i});
    } else if (kind == "cuda") {
      // "cuda" alone means cuda:0; a repeated ordinal puts several replicas on one GPU;
      // "cuda:local" is the GPU of this process's local rank.
      const bool local = has_index && entry.substr(colon + 1) == "local";
      const int ordinal = local ? kLocalGpu : has_index ? number : 0;
      MB_CHECK(!any_local && !(local && any_cuda), ConfigError,
               "device list '{}': cuda:local stands alone (one GPU per process, picked by the local rank)", all);
      any_local = local;
      MB_CHECK(ordinal != kOutOfRange, ConfigError, "device '{}': the GPU ordinal is out of range", entry);
      MB_CHECK(local || ordinal >= 0, ConfigError, "device '{}': cuda:I needs a GPU ordinal I >= 0 (or cuda:local)",
               entry);
      any_cuda = true;
      out.push_back({DeviceKind::Cuda, ordinal});
    } else {
      throw ConfigError(fmt::format("device '{}': unknown kind '{}' (use cpu:N or cuda:I)", entry, kind));
    }
    MB_CHECK(!(any_cpu && any_cuda), ConfigError,
             "device list '{}' mixes CPU and GPU replicas; a run uses one kind", all);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return out;
}

std::string format_devices(const DeviceList& devices) {
  if (devices.empty()) return {};
  if (devices.front().kind == DeviceKind::Cpu) return fmt::format("cpu:{}", devices.size());
  std::string out;
  for (const auto& d : devices) {
    out += out.empty() ? "" : ",";
    out += d.index == kLocalGpu ? std::string("cuda:local") : fmt::format("cuda:{}", d.index);
  }
  return out;
}

DeviceList cpu_replicas(int n) {
  DeviceList out;
  for (int i = 0; i < n; ++i) out.push_back({DeviceKind::Cpu, i});
  return out;
}

DeviceKind device_kind(const DeviceList& devices) {
  return devices.empty() ? DeviceKind::Cpu : devices.front().kind;
}

bool uses_local_gpu(const DeviceList& devices) {
  return !devices.empty() && devices.front().kind == DeviceKind::Cuda && devices.front().index == kLocalGpu;
}

DeviceList resolve_local_gpus(DeviceList devices, int local_process) {
  for (auto& d : devices)
    if (d.kind == DeviceKind::Cuda && d.index == kLocalGpu) d.index = local_process;
  return devices;
}

bool is_simulated(const DeviceList& devices) {
  std::set<int> seen;
  for (const auto& d : devices)
    if (d.kind == DeviceKind::Cuda && !seen.insert(d.index).second) return true;
  return false;
}

}  // namespace mb
