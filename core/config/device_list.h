// How a user names devices ("cpu:2", "cuda:0,cuda:1", "cuda:0,cuda:0", "cuda:local") and the
// parsed form every other layer sees: a list of DeviceSpec, parsed once at the edge.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace mb {

enum class DeviceKind { Cpu, Cuda };
std::string_view to_string(DeviceKind kind);   // "cpu" / "cuda"

struct DeviceSpec {
  DeviceKind kind = DeviceKind::Cpu;
  int index = 0;                    // CPU replica number or CUDA ordinal (kLocalGpu: see below)
  bool operator==(const DeviceSpec&) const = default;
};

// One replica per entry, all of one kind. Never empty once parsed.
using DeviceList = std::vector<DeviceSpec>;

// "cuda:local": the GPU whose ordinal is this process's rank among the run's processes on
// its host (one process per GPU under mpirun/srun); resolve_local_gpus() makes it concrete.
inline constexpr int kLocalGpu = -1;

// Far beyond any machine's cores; keeps "cpu:2000000000" from allocating a device list of
// gigabytes before the batch check rejects it.
inline constexpr int kMaxCpuReplicas = 1024;

// "cpu" = "cpu:1"; "cpu:N" = N CPU replicas; "cuda:I[,cuda:J...]" = one replica per entry;
// "cuda:local" = one GPU picked by the local rank. Throws ConfigError for anything else
// (unknown kind, N < 1, mixed CPU and GPU), naming the entry.
DeviceList parse_devices(std::string_view text);
std::string format_devices(const DeviceList& devices);   // inverse of parse ("" for an empty list)

DeviceList cpu_replicas(int n);                           // cpu:n
DeviceKind device_kind(const DeviceList& devices);        // the list's kind (Cpu for an empty list)
bool uses_local_gpu(const DeviceList& devices);           // cuda:local
// cuda:local -> cuda:<local_process>.
DeviceList resolve_local_gpus(DeviceList devices, int local_process);
// True when two or more replicas share one GPU (in-GPU communicator, labelled simulated).
bool is_simulated(const DeviceList& devices);

}  // namespace mb
