// The backends and transports of this build, one row each, and the one file (registry.cpp)
// that knows which were compiled in (every MB_HAVE_* of the core). Everything that decides on
// a backend asks here: which device kind it drives, what auto picks, the precisions it
// computes in, whether a simulated straggler can slow it, how its engine is made, its
// library versions. A new backend is a row here and a folder beside reference/ and onednn/.
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/replica_engine.h"
#include "comm/communicator.h"
#include "comm/launch.h"
#include "comm/mpi_session.h"
#include "config/backend.h"
#include "config/device_list.h"
#include "config/engine_options.h"
#include "config/precision.h"

namespace mb {

struct GpuInfo;

struct BackendInfo {
  Backend backend = Backend::Reference;
  DeviceKind device_kind = DeviceKind::Cpu;
  std::string_view label;                  // for people: "oneDNN + own Highway kernels"
  std::string_view not_built;              // empty: compiled in; else why not
  std::span<const Precision> precisions;   // what it computes in (fp32 first)
  bool straggler = false;                  // a simulated straggler can slow it (the host runs its compute)
  bool balanced_shares = false;            // --balance: its steps take any share, timed every step
  bool host_step = false;                  // its step is ReplicaEngine's generic one: --accumulate, --lr-warmup
  bool simulated_link = false;             // a simulated link can slow its all-reduce (ends on the host)
  bool gradient_timeline = false;          // says when each layer's gradient is complete: --bucket-mb overlaps
  std::unique_ptr<ReplicaEngine> (*make_engine)(const DeviceSpec& device, int max_batch, Precision precision,
                                                const ModelSpec& model, const EngineOptions& options) = nullptr;
  std::string (*versions)() = nullptr;     // its libraries, e.g. "oneDNN 2.6.3"
  // Why it cannot train a model ("" when it can; nullptr: it trains every model).
  std::string (*model_refusal)(const ModelSpec& model) = nullptr;

  bool built() const { return not_built.empty(); }
  bool supports(Precision p) const;
  bool supports(const ModelSpec& model) const { return refuses(model).empty(); }
  std::string refuses(const ModelSpec& model) const { return model_refusal ? model_refusal(model) : std::string(); }
};

// Every backend, the preferred one of each device kind first.
std::span<const BackendInfo> backend_registry();
const BackendInfo& backend_info(Backend backend);

// The backend a choice means for a device kind ("auto": the preferred built one). Throws
// ConfigError naming --backend when the backend drives another kind of device.
Backend resolve_backend(DeviceKind kind, BackendChoice choice);

// GPUs usable by this process (empty with *why_none saying why: no driver, not built, ...).
std::vector<GpuInfo> list_built_gpus(std::string* why_none);

// The device communicators for this process's GPU replicas over their host communicators:
// NCCL for distinct GPUs, the in-GPU reduction for replicas sharing one (simulated).
std::vector<std::unique_ptr<Communicator>> make_gpu_communicators(const DeviceList& devices,
                                                                  std::vector<std::unique_ptr<Communicator>> host);

// MPI for runs across processes: whether this build has it, and the session for a process
// a launcher started (ConfigError when this build cannot join one).
bool mpi_built();
std::unique_ptr<MpiSession> join_mpi_session(const LaunchInfo& launch, double timeout_s);

// "oneDNN 2.6.3; CUDA 13.0, cuDNN 9.x, NCCL 2.28" or "...; CUDA: not built".
std::string components_summary();
std::string mpi_summary();   // "MPI: Open MPI (mpirun, srun --mpi=pmix)" or "MPI: not built"

}  // namespace mb
