// The mirrored trainer: resolves the request, checks the processes agree, makes the
// communicators and runs one thread per local replica (trainer/replica_loop.h) to the record.
#include "trainer/mirrored_trainer.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "backends/devices.h"
#include "comm/compressed_all_reduce.h"
#include "comm/powersgd.h"
#include "comm/simulated_link.h"
#include "config/train_options.h"
#include "trainer/process_handshake.h"
#include "trainer/replica_threads.h"
#include "util/cpu_topology.h"
#include "util/error.h"
#include "util/system_info.h"

namespace mb {

MirroredTrainer::MirroredTrainer(const TrainConfig& config, std::shared_ptr<const DataSplit> data,
                                 std::shared_ptr<ProcessLink> link)
    : data_(std::move(data)), link_(std::move(link)) {
  MB_CHECK(data_ != nullptr, ConfigError, "no data set loaded");
  const ProcessInfo world = link_ ? link_->info() : ProcessInfo{};
  run_ = resolve_run(config, world, *data_, query_devices());
  // The engine options that hold for the whole process, before any replica thread runs; a CPU
  // run records the kernels it computes with.
  std::string math_kernels;
  if (device_kind(run_.devices) == DeviceKind::Cpu) {
    apply_process_kernel_options(config.engine);
    if (run_.config.backend == Backend::OneDnn) {
      run_.config.kernels = cpu_kernels(config.engine);
      math_kernels = cpu_math_kernels(config.engine);
    } else {
      run_.config.kernels = math_kernels = "reference loops";
    }
  }
  if (world.processes > 1)
    run_.config.hosts = check_processes_agree(*link_, config_digest(config), *data_, int(run_.devices.size()),
                                              run_.config.hosts.front(), math_kernels);
}

MirroredTrainer::~MirroredTrainer() = default;

// CPU replicas each get a core of their own: this process's share of the host's cores when
// the launcher left the processes unbound, else (bound, or alone) its own.
std::function<int(int)> MirroredTrainer::cpu_plan(const TrainObserver& observer) const {
  const CpuPlacement placement = cpu_placement();
  const ProcessInfo& world = run_.world;
  const int local = int(run_.devices.size());
  auto cpu_for = [placement, world, local](int l) {
    const std::size_t cpus = placement.order.size();
    if (std::size_t(world.local_processes) * local <= cpus) return placement.order[std::size_t(world.local_process * local + l)];
    if (std::size_t(local) <= cpus) return placement.order[std::size_t(l)];
    return -1;
  };
  if (device_kind(run_.devices) != DeviceKind::Cpu) return [](int) { return -1; };
  // (More replicas than CPUs was already advised by the run check; under a launcher that is
  // usually its binding, which is worth saying how to change.)
  if (cpu_for(0) < 0 && world.processes > 1)
    log_line(observer, LogLevel::Warning,
             fmt::format("process {} may run on {} CPU(s) but has {} replicas: start mpirun with --bind-to none "
                         "(or --map-by socket:PE={}) so each replica gets a core",
                         world.process, placement.order.size(), local, local));
  if (cpu_for(0) >= 0 && local > placement.physical_cores)
    spdlog::info("{} CPU replicas on {} physical core(s): some share a core with its SMT sibling and run slower",
                 local, placement.physical_cores);
  return cpu_for;
}

// The replicas' communicators, collective over the link; a compressed all-reduce, then a
// simulated link wrap each (the link counts the compressed bytes), then PowerSGD (outside the
// link, so that the link times the factors' two exchanges it really makes). A
// simulated straggler makes the others wait its factor times as long for it, on purpose: the
// deadline stretches with it.
std::vector<std::unique_ptr<Communicator>> MirroredTrainer::connect() const {
  const Scenario& scenario = run_.config.scenario;
  const double stretch = scenario.straggler.on() ? std::max(1.0, scenario.straggler.factor) : 1.0;
  auto comms = make_communicators(run_.devices, link_, run_.timeout_s * stretch);
  if (scenario.allreduce_dtype != WireDtype::Fp32)
    for (auto& c : comms) c = make_compressed_all_reduce(std::move(c), scenario.allreduce_dtype);
  if (scenario.link.on())
    for (auto& c : comms) c = make_simulated_link(std::move(c), scenario.link);
  if (scenario.powersgd_rank > 0) {
    const ModelShape& shape = run_.config.model.shape();
    const PowerSgdLayout layout = powersgd_layout(shape.params, shape.param_count, scenario.powersgd_rank);
    for (auto& c : comms) c = make_powersgd(std::move(c), layout, run_.config.seed);
  }
  return comms;
}

RunRecord MirroredTrainer::run(const TrainObserver& caller_observer) {
  const RunConfig& rc = run_.config;
  // Only process 0 reports; the others train silently.
  const TrainObserver observer = is_primary() ? caller_observer : TrainObserver{};
  RecordBuilder record(rc);

  std::vector<std::unique_ptr<Communicator>> comms;
  try {
    comms = connect();
    record.connected(comms.front()->name());
  } catch (const std::exception& e) {
    if (link_) link_->request_abort(e.what());   // the other processes must not wait for this one
    record.failed(e.what());
    log_line(observer, LogLevel::Error, e.what());
    return record.snapshot();
  }
  log_line(observer, LogLevel::Info,
           fmt::format("training {} on {} replica(s) [{}{}], global batch {}, lr {}, {} step(s)/epoch, comm {}",
                       rc.dataset, rc.replicas, rc.devices_text(),
                       rc.processes > 1 ? fmt::format(" in each of {} processes", rc.processes) : "", rc.global_batch,
                       rc.learning_rate, run_.steps_per_epoch(), record.communicator()));
  if (observer.on_start) observer.on_start(record.snapshot().config);

  train_replicas(comms, observer, record);

  const RunRecord done = record.snapshot();
  if (done.status == RunStatus::Failed)
    log_line(observer, LogLevel::Error, "run failed: " + done.error);
  else if (done.status == RunStatus::Stopped)
    log_line(observer, LogLevel::Info, fmt::format("run stopped after {} complete epoch(s)", done.epochs.size()));
  return done;
}

// One thread per local replica (replica_loop.h) until every one has finished, or, once the run
// failed, until the grace period ends; then engines, communicators and what the run left.
void MirroredTrainer::train_replicas(std::vector<std::unique_ptr<Communicator>>& comms, const TrainObserver& observer,
                                     RecordBuilder& record) {
  const int local = int(run_.devices.size());
  PrimaryBook book(run_.config, observer, record, run_.steps_per_epoch());
  std::vector<std::unique_ptr<ReplicaEngine>> engines(static_cast<std::size_t>(local));
  ReplicaShared shared{{run_, *data_, engine_factory_, cpu_plan(observer), stop_}, {comms, engines}, {book, record}, {}};

  // Every replica gets a fresh thread (replica 0 too): pinning must not leak into the
  // caller's thread, which may be a GUI worker or the CLI's main thread.
  ReplicaThreads threads(local);
  int started = 0;
  try {
    for (; started < local; ++started) threads.start(started, [&shared, started] { run_replica(shared, started); });
  } catch (const std::exception& e) {
    // The replicas already started wait in their first collective: release them, then join.
    shared.fail(fmt::format("cannot start a thread for replica {}: {}", started, e.what()));
  }
  // Bounded once the run failed: a thread stuck in a driver call is reported, not waited for
  // in silence (replica_threads.h).
  const double grace_s = 2 * run_.timeout_s;
  threads.join([&] { return record.has_failed(); }, grace_s, [&](const std::vector<int>& stuck) {
    std::vector<int> ranks;
    for (int l : stuck) ranks.push_back(comms[std::size_t(l)]->rank());
    RunRecord failed = record.snapshot();
    failed.status = RunStatus::Failed;
    failed.error = record.error() + "; " + stuck_threads_message(ranks, grace_s);
    log_line(observer, LogLevel::Error, "run failed: " + failed.error);
    if (observer.on_stuck) observer.on_stuck(failed);
  });
  // Engines before communicators: a captured CUDA graph holds NCCL collectives, and NCCL
  // will not destroy a communicator such a graph still uses.
  engines.clear();
  comms.clear();
  final_params_ = std::move(shared.left.final_params);
  trace_ = std::move(shared.left.trace);
}

}  // namespace mb
