// Replica placement from the CPU topology (see cpu_topology.h).
#include "util/cpu_topology.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

namespace mb {
namespace {

int read_int(const std::string& file, int fallback) {
  std::ifstream in(file);
  int v = fallback;
  return (in >> v) ? v : fallback;
}

// The NUMA node of a CPU: the nodeN entry in its sysfs folder.
int node_of(const std::string& cpu_dir) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(cpu_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("node", 0) == 0 && name.size() > 4 && std::all_of(name.begin() + 4, name.end(), ::isdigit))
      return std::stoi(name.substr(4));
  }
  return 0;
}

}  // namespace

CpuPlacement cpu_placement() {
  std::vector<int> allowed;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) allowed.push_back(c);
  }
  return cpu_placement(allowed, "/sys/devices/system/cpu");
}

CpuPlacement cpu_placement(const std::vector<int>& allowed, const std::string& sysfs) {
  CpuPlacement out;
  if (allowed.empty()) return out;

  struct Cpu {
    int id, node, core_rank;   // core_rank: 0 for a core's first hardware thread, 1 for its sibling ...
  };
  std::map<std::tuple<int, int, int>, int> threads_seen;   // (node, package, core) -> threads so far
  std::vector<Cpu> cpus;
  std::set<int> nodes;
  for (int c : allowed) {
    const std::string dir = sysfs + "/cpu" + std::to_string(c);
    const int node = node_of(dir);
    const int package = read_int(dir + "/topology/physical_package_id", 0);
    const int core = read_int(dir + "/topology/core_id", c);   // unknown: every CPU its own core
    const int rank = threads_seen[{node, package, core}]++;
    cpus.push_back({c, node, rank});
    nodes.insert(node);
  }
  out.physical_cores = static_cast<int>(threads_seen.size());
  out.nodes = static_cast<int>(nodes.size());
  // First threads of all cores, then second threads ...; within a level, round-robin over
  // nodes (the k-th CPU of each node before the k+1-th of any), ties by CPU number.
  std::map<std::pair<int, int>, int> index_in_node;   // (level, node) -> count
  std::vector<std::tuple<int, int, int, int>> keyed;  // level, index within node, node, cpu
  for (const Cpu& c : cpus) keyed.emplace_back(c.core_rank, index_in_node[{c.core_rank, c.node}]++, c.node, c.id);
  std::sort(keyed.begin(), keyed.end());
  for (const auto& k : keyed) out.order.push_back(std::get<3>(k));
  return out;
}

bool pin_current_thread(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
}

}  // namespace mb
