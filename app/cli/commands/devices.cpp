// `mirrorbench-cli devices`: what this machine offers (CPU replicas, GPUs or why there are none).
#include <fmt/format.h>

#include "backends/devices.h"
#include "cli_options.h"

namespace mb::cli {
namespace {

int run_devices(const Options&) {
  const DeviceInventory inv = query_devices();
  fmt::print("cpu      {} core(s): {}   -> --devices cpu:1 .. cpu:{}\n", inv.cpu_cores, inv.cpu_name, inv.cpu_cores);
  if (inv.gpus.empty()) fmt::print("gpu      none usable: {}\n", inv.gpu_note);
  for (const auto& g : inv.gpus)
    fmt::print("cuda:{}   {}, {:.1f} GiB, compute capability {}.{}\n", g.index, g.name,
               g.memory_bytes / double(1ull << 30), g.cc_major, g.cc_minor);
  return 0;
}

[[maybe_unused]] const bool registered =
    register_command({"devices", "list the devices this machine offers", 20, {}, run_devices});

}  // namespace
}  // namespace mb::cli
