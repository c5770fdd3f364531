// Which logical CPUs the CPU replicas go to. A replica is one core's worth of work: two
// replicas on the SMT siblings of one core share its FMA units and run at about half speed,
// so replicas take one hardware thread of every physical core first, spread round-robin over
// the NUMA nodes (each node's memory bandwidth serves its own cores), and only then the
// siblings. Read from /sys (Linux); without it, the allowed CPUs in order.
#pragma once
#include <string>
#include <vector>

namespace mb {

struct CpuPlacement {
  std::vector<int> order;   // allowed logical CPUs, best placement first
  int physical_cores = 0;   // distinct cores among them
  int nodes = 1;            // NUMA nodes among them
};

// For this process's affinity mask.
CpuPlacement cpu_placement();
// For the logical CPUs `allowed`, with the topology read under `sysfs` (tests pass a fake tree).
CpuPlacement cpu_placement(const std::vector<int>& allowed, const std::string& sysfs);

// Pins the calling thread to logical CPU `cpu`; false if the system refused.
bool pin_current_thread(int cpu);

}  // namespace mb
