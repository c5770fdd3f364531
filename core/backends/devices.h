// What devices this machine offers, how a user names them ("cpu:2", "cuda:0,cuda:1",
// "cuda:0,cuda:0"), and the factory that builds a replica engine and communicator for them.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "backends/common/precision.h"
#include "backends/replica_engine.h"
#include "comm/communicator.h"
#include "comm/process_link.h"

namespace mb {

enum class DeviceKind { Cpu, Cuda };

struct DeviceSpec {
  DeviceKind kind = DeviceKind::Cpu;
  int index = 0;                    // CPU replica number or CUDA ordinal (kLocalGpu: see below)
  bool operator==(const DeviceSpec&) const = default;
};

// "cuda:local": the GPU whose ordinal is this process's rank among the run's processes on
// its host (one process per GPU under mpirun/srun); resolve_local_gpus() makes it concrete.
inline constexpr int kLocalGpu = -1;

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

// "cpu" = "cpu:1"; "cpu:N" = N CPU replicas; "cuda:I[,cuda:J...]" = one replica per entry;
// "cuda:local" = one GPU picked by the local rank. Throws ConfigError for anything else
// (unknown kind, N < 1, mixed CPU and GPU).
std::vector<DeviceSpec> parse_devices(std::string_view text);
std::string format_devices(const std::vector<DeviceSpec>& devices);   // inverse of parse

// cuda:local -> cuda:<local_process>.
std::vector<DeviceSpec> resolve_local_gpus(std::vector<DeviceSpec> devices, int local_process);

// True when two or more replicas share one GPU (in-GPU communicator, labelled simulated).
bool is_simulated(const std::vector<DeviceSpec>& devices);

// Checks the devices exist on this machine (CPU replicas <= cores is advised, not required;
// CUDA ordinals must exist). Throws ConfigError/DeviceError naming the device.
void validate_devices(const std::vector<DeviceSpec>& devices, const DeviceInventory& inventory);

// CPU backends: "onednn" (fast, default) or "reference" (plain loops). "auto" picks the
// fast one for the device kind. The choice is a word (flags, settings, TrainConfig::backend);
// resolve_backend() is where it becomes a Backend, and throws ConfigError for a word that is
// not a backend of that device kind. `precision` other than Fp32 only for GPU replicas
// (check_train_config refuses it for CPUs).
Backend resolve_backend(DeviceKind kind, std::string_view choice);
std::unique_ptr<ReplicaEngine> make_engine(const DeviceSpec& device, std::string_view backend, int max_batch,
                                           Precision precision = Precision::Fp32);
std::string engine_backend_name(DeviceKind kind, std::string_view backend);  // to_string(resolve_backend())

// The communicators of this process's replicas (one per entry of `devices`, in order): the
// hierarchical host communicator for CPU replicas (threads, plus `link` to the other
// processes when there are some), NCCL for distinct GPUs (across processes too), in-GPU
// reduction for replicas sharing one GPU. Collective over the link. Every wait of theirs
// ends after timeout_s (--timeout) with a StallError naming who did not arrive.
std::vector<std::unique_ptr<Communicator>> make_communicators(const std::vector<DeviceSpec>& devices,
                                                              std::shared_ptr<ProcessLink> link,
                                                              double timeout_s = kDefaultTimeoutS);

// "oneDNN 2.6.3; CUDA 13.0, cuDNN 9.x, NCCL 2.28" or "...; CUDA: not built".
std::string components_summary();

}  // namespace mb
