// Device discovery and the engine and communicator factories over the backend registry.
#include "backends/devices.h"

#include <algorithm>

#include <fmt/format.h>

#include "backends/onednn/onednn_engine.h"
#include "backends/registry.h"
#include "comm/hierarchical_communicator.h"
#include "util/error.h"
#include "util/system_info.h"

namespace mb {

DeviceInventory query_devices() {
  DeviceInventory inv;
  inv.cpu_cores = cpu_core_count();
  inv.cpu_name = cpu_model_name();
  std::string why;
  inv.gpus = list_built_gpus(&why);
  if (inv.gpus.empty()) inv.gpu_note = why.empty() ? "no CUDA device found" : why;
  return inv;
}

std::unique_ptr<ReplicaEngine> make_engine(const DeviceSpec& device, Backend backend, int max_batch,
                                           Precision precision, const ModelSpec& model, const EngineOptions& options) {
  const BackendInfo& b = backend_info(resolve_backend(device.kind, backend));
  MB_CHECK(b.supports(precision), ConfigError, "precision {} needs a GPU replica; the {} engine computes in fp32 only",
           to_string(precision), to_string(b.backend));
  return b.make_engine(device, max_batch, precision, model, options);
}

void apply_process_kernel_options(const EngineOptions& options) { apply_cpu_kernel_options(options); }

std::string cpu_kernels(const EngineOptions& options) { return cpu_kernels_summary(options.cpu_conv2); }

std::string cpu_math_kernels(const EngineOptions& options) {
  const std::string all = cpu_kernels(options);
  const auto comma = all.find(", ");   // after "Highway <target>"
  return comma == std::string::npos ? all : all.substr(comma + 2);
}

std::vector<std::unique_ptr<Communicator>> make_communicators(const DeviceList& devices,
                                                              std::shared_ptr<ProcessLink> link, double timeout_s) {
  MB_CHECK(!devices.empty(), ConfigError, "no devices given");
  // Every kind needs the host communicator: CPU replicas sum their gradients with it, GPU
  // replicas exchange their control-plane data (statistics, digests, NCCL's unique id) over it.
  auto host = make_process_communicators(static_cast<int>(devices.size()), std::move(link), timeout_s);
  if (devices.front().kind == DeviceKind::Cpu) return host;
  const bool one_gpu = std::all_of(devices.begin(), devices.end(), [&](const DeviceSpec& d) {
    return d.index == devices.front().index;
  });
  MB_CHECK(!is_simulated(devices) || one_gpu, ConfigError,
           "device list '{}' shares some GPUs and not others; use distinct GPUs (NCCL) or one GPU (simulated)",
           format_devices(devices));
  MB_CHECK(!is_simulated(devices) || host.front()->size() == int(devices.size()), ConfigError,
           "replicas sharing one GPU (simulated) run in one process; use cuda:local for one GPU per process");
  return make_gpu_communicators(devices, std::move(host));
}

}  // namespace mb
