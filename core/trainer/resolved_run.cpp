// From request to resolved run (see resolved_run.h).
#include "trainer/resolved_run.h"

#include <algorithm>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "backends/registry.h"
#include "config/train_options.h"
#include "model/cnn_spec.h"
#include "trainer/run_check.h"
#include "util/error.h"
#include "util/system_info.h"

namespace mb {
namespace {

std::string host_name() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

}  // namespace

int64_t ResolvedRun::steps_per_epoch() const {
  return (config.train_size + config.global_batch - 1) / config.global_batch;
}

ResolvedRun resolve_run(const TrainConfig& request, const ProcessInfo& world, const DataSplit& data,
                        const DeviceInventory& inventory) {
  // The machine is checked as a whole by whoever launches several processes (the workbench);
  // here, alone, against this process's devices (under a launcher a process sees only the
  // CPUs it was bound to). Each process checks its own GPUs below.
  const bool alone = world.processes == 1;
  const RunSite site{world.processes, world.processes == world.local_processes, alone ? &inventory : nullptr};
  for (const RunProblem& advice : require_runnable(request, site)) spdlog::warn("{}", advice.message);
  MB_CHECK(data.train.count >= 1, ConfigError, "the training set '{}' is empty", data.train.name);
  MB_CHECK(data.train.rows == cnn::kImageSide && data.train.cols == cnn::kImageSide, ConfigError,
           "the model needs 28x28 images, the data set has {}x{}", data.train.rows, data.train.cols);

  ResolvedRun run;
  run.world = world;
  run.devices = resolve_local_gpus(request.devices, world.local_process);
  // This process's own GPUs exist here (other hosts check theirs).
  for (const DeviceSpec& d : run.devices)
    MB_CHECK(d.kind != DeviceKind::Cuda || d.index < int(inventory.gpus.size()), ConfigError,
             "cuda:{}: no such GPU on host {} (it has {}{})", d.index, world.host.empty() ? host_name() : world.host,
             inventory.gpus.size(), inventory.gpus.empty() ? ": " + inventory.gpu_note : std::string());
  run.model = request.model;
  run.trace = request.trace;
  run.timeout_s = request.timeout_s;
  RunShape shape;
  shape.replicas = total_replicas(request, world.processes);
  shape.processes = world.processes;
  shape.backend = resolve_backend(device_kind(request.devices), request.backend);
  shape.dataset = data.name;
  shape.data_dir = data.dir.string();
  shape.train_available = data.train.count;
  shape.val_available = data.val.count;
  run.config = resolve_options(request, shape);

  RunConfig& rc = run.config;
  rc.hosts = {world.host.empty() ? host_name() : world.host};
  rc.version = version();
  rc.cpu_model = inventory.cpu_name;
  for (const auto& d : run.devices)
    if (d.kind == DeviceKind::Cuda)
      for (const auto& g : inventory.gpus)
        if (g.index == d.index) rc.gpu_models.push_back(g.name);
  return run;
}

}  // namespace mb
