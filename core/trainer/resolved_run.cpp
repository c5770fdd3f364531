// From request to resolved run (see resolved_run.h).
#include "trainer/resolved_run.h"

#include <algorithm>

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backends/registry.h"
#include "config/train_options.h"
#include "data/data_fit.h"
#include "records/run_record.h"
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

// The share changes of the record `--shares-from` names, for a run resolved to `rc`: only a
// balanced run of the same configuration (what the math depends on) can be replayed bit for bit.
std::vector<ShareChange> load_replayed_shares(const std::string& file, const RunConfig& rc) {
  RunRecord rec;
  try {
    rec = read_run_json(file);
  } catch (const DataError& e) {
    throw ConfigError(fmt::format("--shares-from: {}", e.what()));
  }
  const RunConfig& was = rec.config;
  MB_CHECK(was.scenario.balanced() && !was.share_changes.empty(), ConfigError,
           "--shares-from {}: run {} is a lock-step run: it has no share changes to replay", file, rec.id);
  auto same = [&](bool equal, std::string_view what, const std::string& then, const std::string& now) {
    MB_CHECK(equal, ConfigError, "--shares-from {}: run {} is of another configuration: its {} was {}, this run's is {}",
             file, rec.id, what, then, now);
  };
  same(was.replicas == rc.replicas, "replica count", fmt::format("{}", was.replicas), fmt::format("{}", rc.replicas));
  same(was.global_batch == rc.global_batch, "global batch", fmt::format("{}", was.global_batch),
       fmt::format("{}", rc.global_batch));
  same(was.train_size == rc.train_size, "training set size", fmt::format("{}", was.train_size),
       fmt::format("{}", rc.train_size));
  same(was.seed == rc.seed, "seed", fmt::format("{}", was.seed), fmt::format("{}", rc.seed));
  same(was.learning_rate == rc.learning_rate, "learning rate", fmt::format("{}", was.learning_rate),
       fmt::format("{}", rc.learning_rate));
  same(was.backend == rc.backend, "backend", std::string(to_string(was.backend)), std::string(to_string(rc.backend)));
  for (const ShareChange& x : was.share_changes) {
    int64_t sum = 0;
    for (const int64_t share : x.shares) sum += share;
    MB_CHECK(int(x.shares.size()) == rc.replicas && sum == rc.global_batch, ConfigError,
             "--shares-from {}: the shares of step {} are not {} shares of the global batch {}", file, x.step,
             rc.replicas, rc.global_batch);
  }
  return was.share_changes;
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
  // The model's input is the data's shape (before any replica is made): refused naming both.
  for (const Dataset* d : {&data.train, &data.val})
    if (const std::string why = data_misfit(*d, request.model); !why.empty()) throw ConfigError(why);

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
  if (!rc.scenario.shares_from.empty()) run.replay_shares = load_replayed_shares(rc.scenario.shares_from, rc);
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
