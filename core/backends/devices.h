// What devices this machine offers, and the factories that build a replica engine and the
// communicators for a device list (asking the backend registry, backends/registry.h).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/replica_engine.h"
#include "comm/communicator.h"
#include "comm/process_link.h"
#include "config/backend.h"
#include "config/device_list.h"
#include "config/engine_options.h"
#include "config/precision.h"

namespace mb {

struct GpuInfo {
  int index = 0;
  std::string name;                 // "NVIDIA H200"
  int64_t memory_bytes = 0;
  int cc_major = 0, cc_minor = 0;
};

struct DeviceInventory {
  int cpu_cores = 1;
  std::string cpu_name;
  std::vector<GpuInfo> gpus;
  std::string gpu_note;             // why no GPU is usable ("built without CUDA", "no driver", ...)
};

DeviceInventory query_devices();

// The engine of one replica: `backend` must drive `device`'s kind and compute in `precision`
// (the registry's row; the run's check has said so already, this throws ConfigError otherwise).
std::unique_ptr<ReplicaEngine> make_engine(const DeviceSpec& device, Backend backend, int max_batch,
                                           Precision precision = Precision::Fp32, const ModelSpec& model = {},
                                           const EngineOptions& options = {});

// The engine options that hold for the whole process (oneDNN's instruction set, the own CPU
// kernels' Highway target), applied before a run's replica threads start; ConfigError when
// this process cannot take them (oneDNN is capped once per process).
void apply_process_kernel_options(const EngineOptions& options);
// The kernels a CPU run of these options computes with: "Highway avx3, oneDNN avx2, conv2 own
// winograd" (the run record's `kernels`, the golden digests' key), and the part of it that
// decides the bits, "oneDNN avx2, conv2 own winograd" (every Highway target sums alike), which
// every process of a run must share.
std::string cpu_kernels(const EngineOptions& options);
std::string cpu_math_kernels(const EngineOptions& options);

// The communicators of this process's replicas (one per entry of `devices`, in order): the
// hierarchical host communicator for CPU replicas (threads, plus `link` to the other
// processes when there are some), NCCL for distinct GPUs (across processes too), in-GPU
// reduction for replicas sharing one GPU. Collective over the link. Every wait of theirs
// ends after timeout_s (--timeout) with a StallError naming who did not arrive.
std::vector<std::unique_ptr<Communicator>> make_communicators(const DeviceList& devices,
                                                              std::shared_ptr<ProcessLink> link,
                                                              double timeout_s = kDefaultTimeoutS);

}  // namespace mb
