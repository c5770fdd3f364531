// Device discovery, the "cpu:N" / "cuda:I,cuda:J" syntax, and the factories that pick an
// engine and a communicator for a device list. CUDA calls go through cuda/cuda_backend.h only.
#include "backends/devices.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backends/onednn/onednn_engine.h"
#include "backends/reference/reference_engine.h"
#include "comm/hierarchical_communicator.h"
#include "util/error.h"
#include "util/system_info.h"
#ifdef MB_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif

namespace mb {
namespace {

constexpr std::string_view kNoCuda = "built without CUDA support";
// Far beyond any machine's cores; keeps "cpu:2000000000" from allocating a device list of
// gigabytes before the batch check rejects it.
constexpr int kMaxCpuReplicas = 1024;

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

#ifndef MB_HAVE_CUDA
[[noreturn]] void reject_cuda_build(const DeviceSpec& d) {
  throw ConfigError(fmt::format("cuda:{}: this mirrorbench was {}; use cpu:N", d.index, kNoCuda));
}
#endif

}  // namespace

DeviceInventory query_devices() {
  DeviceInventory inv;
  inv.cpu_cores = cpu_core_count();
  inv.cpu_name = cpu_model_name();
#ifdef MB_HAVE_CUDA
  std::string why;
  inv.gpus = cuda::list_gpus(&why);
  if (inv.gpus.empty()) inv.gpu_note = why.empty() ? "no CUDA device found" : why;
#else
  inv.gpu_note = std::string(kNoCuda);
#endif
  return inv;
}

std::vector<DeviceSpec> parse_devices(std::string_view text) {
  const std::string_view all = trim(text);
  MB_CHECK(!all.empty(), ConfigError, "device list is empty: use cpu:N or cuda:I[,cuda:J...]");
  std::vector<DeviceSpec> out;
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

std::string format_devices(const std::vector<DeviceSpec>& devices) {
  if (devices.empty()) return {};
  if (devices.front().kind == DeviceKind::Cpu) return fmt::format("cpu:{}", devices.size());
  std::string out;
  for (const auto& d : devices) {
    out += out.empty() ? "" : ",";
    out += d.index == kLocalGpu ? std::string("cuda:local") : fmt::format("cuda:{}", d.index);
  }
  return out;
}

std::vector<DeviceSpec> resolve_local_gpus(std::vector<DeviceSpec> devices, int local_process) {
  for (auto& d : devices)
    if (d.kind == DeviceKind::Cuda && d.index == kLocalGpu) d.index = local_process;
  return devices;
}

bool is_simulated(const std::vector<DeviceSpec>& devices) {
  std::set<int> seen;
  for (const auto& d : devices)
    if (d.kind == DeviceKind::Cuda && !seen.insert(d.index).second) return true;
  return false;
}

void validate_devices(const std::vector<DeviceSpec>& devices, const DeviceInventory& inventory) {
  MB_CHECK(!devices.empty(), ConfigError, "no devices given");
  const int cpus = static_cast<int>(std::count_if(devices.begin(), devices.end(),
                                                  [](const DeviceSpec& d) { return d.kind == DeviceKind::Cpu; }));
  MB_CHECK(cpus == 0 || cpus == int(devices.size()), ConfigError, "device list mixes CPU and GPU replicas");
  if (cpus > inventory.cpu_cores)
    spdlog::warn("cpu:{} asks for more replicas than the {} cores here: replicas will share cores and the "
                 "timings will not mean much",
                 cpus, inventory.cpu_cores);
  for (const auto& d : devices) {
    if (d.kind != DeviceKind::Cuda) continue;
#ifndef MB_HAVE_CUDA
    reject_cuda_build(d);
#else
    if (inventory.gpus.empty())
      throw DeviceError(fmt::format("cuda:{}: no usable GPU on this machine ({})", d.index, inventory.gpu_note));
    MB_CHECK(d.index >= 0 && d.index < int(inventory.gpus.size()), ConfigError,
             "cuda:{}: no such GPU; this machine has {} (cuda:0..cuda:{})", d.index, inventory.gpus.size(),
             inventory.gpus.size() - 1);
#endif
  }
}

Backend resolve_backend(DeviceKind kind, std::string_view choice) {
  const std::optional<Backend> named = parse_backend(choice);
  if (kind == DeviceKind::Cpu) {
    if (choice == "auto") return Backend::OneDnn;
    if (named == Backend::OneDnn || named == Backend::Reference) return *named;
    throw ConfigError(fmt::format("backend '{}' does not run on CPU replicas (use auto, onednn or reference)", choice));
  }
  if (choice == "auto" || named == Backend::Cuda) return Backend::Cuda;
  throw ConfigError(fmt::format("backend '{}' does not run on GPU replicas (use auto or cuda)", choice));
}

std::string engine_backend_name(DeviceKind kind, std::string_view backend) {
  return std::string(to_string(resolve_backend(kind, backend)));
}

std::unique_ptr<ReplicaEngine> make_engine(const DeviceSpec& device, std::string_view backend, int max_batch,
                                           Precision precision) {
  const Backend kind = resolve_backend(device.kind, backend);
  MB_CHECK(precision == Precision::Fp32 || device.kind == DeviceKind::Cuda, ConfigError,
           "precision {} needs a GPU replica; the {} engine computes in fp32 only", to_string(precision),
           to_string(kind));
  switch (kind) {
    case Backend::OneDnn: return make_onednn_engine(max_batch);
    case Backend::Reference: return make_reference_engine(max_batch);
    case Backend::Cuda: break;
  }
#ifdef MB_HAVE_CUDA
  return cuda::make_cuda_engine(device.index, max_batch, precision);
#else
  reject_cuda_build(device);
#endif
}

std::vector<std::unique_ptr<Communicator>> make_communicators(const std::vector<DeviceSpec>& devices,
                                                              std::shared_ptr<ProcessLink> link, double timeout_s) {
  MB_CHECK(!devices.empty(), ConfigError, "no devices given");
  // Every kind needs the host communicator: CPU replicas sum their gradients with it, GPU
  // replicas exchange their control-plane data (statistics, digests, NCCL's unique id) over it.
  auto host = make_process_communicators(static_cast<int>(devices.size()), std::move(link), timeout_s);
  if (devices.front().kind == DeviceKind::Cpu) return host;
#ifdef MB_HAVE_CUDA
  std::vector<int> ordinals;
  for (const auto& d : devices) ordinals.push_back(d.index);
  if (!is_simulated(devices)) return cuda::make_nccl_communicators(ordinals, std::move(host));
  const bool one_gpu = std::all_of(ordinals.begin(), ordinals.end(), [&](int i) { return i == ordinals.front(); });
  MB_CHECK(one_gpu, ConfigError,
           "device list '{}' shares some GPUs and not others; use distinct GPUs (NCCL) or one GPU (simulated)",
           format_devices(devices));
  MB_CHECK(host.front()->size() == int(devices.size()), ConfigError,
           "replicas sharing one GPU (simulated) run in one process; use cuda:local for one GPU per process");
  return cuda::make_in_gpu_communicators(ordinals.front(), std::move(host));
#else
  reject_cuda_build(devices.front());
#endif
}

std::string components_summary() {
#ifdef MB_HAVE_CUDA
  return fmt::format("oneDNN {}; {}", onednn_version(), cuda::versions());
#else
  return fmt::format("oneDNN {}; CUDA: not built", onednn_version());
#endif
}

}  // namespace mb
