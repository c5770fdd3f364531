// The backend registry: one row per backend, and every #ifdef of the build's optional parts
// (CUDA, MPI). The rest of the core asks these functions instead of testing macros.
#include "backends/registry.h"

#include <fmt/format.h>

#include "backends/devices.h"
#include "backends/onednn/onednn_engine.h"
#include "backends/reference/reference_engine.h"
#include "util/error.h"
#ifdef MB_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif

namespace mb {
namespace {

constexpr Precision kFp32Only[] = {Precision::Fp32};
constexpr Precision kFp32AndTf32[] = {Precision::Fp32, Precision::Tf32};

std::unique_ptr<ReplicaEngine> make_onednn(const DeviceSpec&, int max_batch, Precision, const ModelSpec& model,
                                           const EngineOptions& options) {
  return make_onednn_engine(max_batch, 1, model, options.cpu_conv2);
}
std::unique_ptr<ReplicaEngine> make_reference(const DeviceSpec&, int max_batch, Precision, const ModelSpec& model,
                                              const EngineOptions&) {
  return make_reference_engine(max_batch, model);
}
std::string onednn_versions() { return fmt::format("oneDNN {}", onednn_version()); }
std::string no_versions() { return {}; }

#ifdef MB_HAVE_CUDA
constexpr std::string_view kCudaNotBuilt = "";
std::unique_ptr<ReplicaEngine> make_cuda(const DeviceSpec& device, int max_batch, Precision precision,
                                         const ModelSpec& model, const EngineOptions& options) {
  return cuda::make_cuda_engine(device.index, max_batch, precision, model, options);
}
std::string cuda_versions() { return cuda::versions(); }
#else
constexpr std::string_view kCudaNotBuilt = "built without CUDA support";
std::unique_ptr<ReplicaEngine> make_cuda(const DeviceSpec& device, int, Precision, const ModelSpec&,
                                         const EngineOptions&) {
  throw ConfigError(fmt::format("cuda:{}: this mirrorbench was {}; use cpu:N", device.index, kCudaNotBuilt));
}
std::string cuda_versions() { return "CUDA: not built"; }
#endif

// The CUDA engine's kernels (cuDNN and the fused path) are written for the reference family;
// a general layer path waits for the GPU check to have validated it on a device.
std::string cuda_model_refusal(const ModelSpec& model) {
  if (reference_family_width(model)) return {};
  return "the CUDA backend trains the reference family only (conv32-pool-conv64-pool-denseN-dense10 on 28x28x1): "
         "other models are not yet validated on a GPU; use cpu:N";
}

const BackendInfo kBackends[] = {
    {.backend = Backend::OneDnn, .device_kind = DeviceKind::Cpu, .label = "oneDNN + own Highway kernels",
     .precisions = kFp32Only, .straggler = true, .balanced_shares = true, .host_step = true, .simulated_link = true, .gradient_timeline = true, .make_engine = make_onednn, .versions = onednn_versions},
    {.backend = Backend::Reference, .device_kind = DeviceKind::Cpu, .label = "reference loops",
     .precisions = kFp32Only, .straggler = true, .balanced_shares = true, .host_step = true, .simulated_link = true, .make_engine = make_reference, .versions = no_versions},
    // A GPU step runs ahead of the host, so a straggler idling on the host would not slow it;
    // it reports only every 64 steps and keys its graphs by a fixed share: no balanced shares yet.
    {.backend = Backend::Cuda, .device_kind = DeviceKind::Cuda, .label = "CUDA (cuDNN, cuBLAS, NCCL)",
     .not_built = kCudaNotBuilt, .precisions = kFp32AndTf32, .straggler = false, .make_engine = make_cuda,
     .versions = cuda_versions, .model_refusal = cuda_model_refusal},
};

std::string backends_of(DeviceKind kind) {
  std::vector<std::string_view> names{kAutoBackend};
  for (const BackendInfo& b : kBackends)
    if (b.device_kind == kind) names.push_back(to_string(b.backend));
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += fmt::format("{}{}", i == 0 ? "" : i + 1 == names.size() ? " or " : ", ", names[i]);
  return out;
}

}  // namespace

bool BackendInfo::supports(Precision p) const {
  for (Precision q : precisions)
    if (q == p) return true;
  return false;
}

std::span<const BackendInfo> backend_registry() { return kBackends; }

const BackendInfo& backend_info(Backend backend) {
  for (const BackendInfo& b : kBackends)
    if (b.backend == backend) return b;
  throw Error(fmt::format("backend '{}' has no row in the registry", to_string(backend)));
}

Backend resolve_backend(DeviceKind kind, BackendChoice choice) {
  if (!choice) {
    for (const BackendInfo& b : kBackends)
      if (b.device_kind == kind) return b.backend;   // the preferred one (built or not: validation says why not)
  }
  const BackendInfo& b = backend_info(choice.value_or(Backend::Reference));
  MB_CHECK(b.device_kind == kind, ConfigError, "backend '{}' does not run on {} replicas (use {})",
           to_string(b.backend), kind == DeviceKind::Cpu ? "CPU" : "GPU", backends_of(kind));
  return b.backend;
}

std::vector<GpuInfo> list_built_gpus(std::string* why_none) {
#ifdef MB_HAVE_CUDA
  return cuda::list_gpus(why_none);
#else
  if (why_none) *why_none = std::string(kCudaNotBuilt);
  return {};
#endif
}

std::vector<std::unique_ptr<Communicator>> make_gpu_communicators(const DeviceList& devices,
                                                                  std::vector<std::unique_ptr<Communicator>> host) {
#ifdef MB_HAVE_CUDA
  std::vector<int> ordinals;
  for (const auto& d : devices) ordinals.push_back(d.index);
  if (!is_simulated(devices)) return cuda::make_nccl_communicators(ordinals, std::move(host));
  return cuda::make_in_gpu_communicators(ordinals.front(), std::move(host));
#else
  (void)host;
  throw ConfigError(fmt::format("{}: this mirrorbench was {}; use cpu:N", format_devices(devices), kCudaNotBuilt));
#endif
}

bool mpi_built() {
#ifdef MB_HAVE_MPI
  return true;
#else
  return false;
#endif
}

std::unique_ptr<MpiSession> join_mpi_session(const LaunchInfo& launch, double timeout_s) {
#ifdef MB_HAVE_MPI
  return start_mpi_session(launch, timeout_s);
#else
  (void)timeout_s;
  throw ConfigError(fmt::format("started by {} as one of {} processes ({}), but this mirrorbench-cli was built "
                                "without MPI: rebuild with libopenmpi-dev installed (-DMB_WITH_MPI=ON), or run it "
                                "without the launcher",
                                launch.launcher, launch.processes, launch.variable));
#endif
}

std::string components_summary() {
  return fmt::format("{}; {}", onednn_versions(), cuda_versions());
}

std::string mpi_summary() { return mpi_built() ? "MPI: Open MPI (mpirun, srun --mpi=pmix)" : "MPI: not built"; }

}  // namespace mb
