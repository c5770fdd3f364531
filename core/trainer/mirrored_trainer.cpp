// The mirrored trainer: one thread per local replica, lock-step through the epoch. Each step
// every replica trains on its share of the global batch and the engines all-reduce the
// gradients and apply the same Adam step; at each report (every step on CPUs) the replicas
// all-gather their statistics, rank 0 folds them into the running metrics and reports
// progress, and every rank takes the same stop decision from the same gathered data.
#include "trainer/mirrored_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "backends/common/precision.h"
#include "backends/devices.h"
#include "backends/straggler_engine.h"
#include "comm/communicator.h"
#include "model/cnn_spec.h"
#include "trainer/replica_threads.h"
#include "util/cpu_topology.h"
#include "util/digest.h"
#include "util/error.h"
#include "util/random.h"
#include "util/spin_barrier.h"
#include "util/system_info.h"

namespace mb {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kMaxGlobalBatch = 65536;
constexpr int64_t kMaxTraceSteps = 2000;   // per replica: a trace of a few MB, sampled evenly
constexpr std::size_t kRecentReports = 6;  // the live timeline's steps
constexpr int64_t kDetailEvery = 16;       // steps between detailed steps (each one, at teaching pace)
constexpr std::size_t kDetailSamples = 256;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Training order for one epoch: a seeded shuffle that every replica derives identically.
std::vector<int32_t> epoch_order(int64_t n, uint64_t seed, int epoch) {
  std::vector<int32_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  // Seed and epoch are each hashed first: a plain seed*k + epoch would make neighbouring
  // seeds' streams shifted copies of each other (SplitMix steps its state by a constant).
  SplitMix64 rng(SplitMix64(seed).next() ^ SplitMix64(0x6A09E667F3BCC909ull + static_cast<uint64_t>(epoch)).next());
  shuffle(std::span<int32_t>(order), rng);
  return order;
}

// One log line to spdlog and to the observer.
void log_line(const TrainObserver& observer, LogLevel level, const std::string& line) {
  switch (level) {
    case LogLevel::Info: spdlog::info("{}", line); break;
    case LogLevel::Warning: spdlog::warn("{}", line); break;
    case LogLevel::Error: spdlog::error("{}", line); break;
  }
  if (observer.on_log) observer.on_log(level, line);
}

// Each replica's contribution to a report, all-gathered (rank order).
struct StepReport {
  BatchStats stats;      // the steps since the last report
  PhaseTimes times;      // likewise
  int32_t stop = 0;      // this process was asked to stop
  int32_t detailed = 0;  // the fields below describe this report's last step
  double grad_norm = 0;  // this replica's own gradient, before the all-reduce
  uint64_t digest = 0;   // its parameters after the step
  int64_t share_begin = 0, share_count = 0;
  PhaseTimes step_times;
};

// Each replica's end of an epoch, all-gathered.
struct EpochReport {
  BatchStats val;        // its share of the validation set
  uint64_t digest = 0;   // of its parameters
  int32_t stop = 0;
  int32_t pad = 0;
};

// What every process tells the others before training (constructor), to check that they run
// the same configuration on the same data.
struct ProcessWire {
  char host[64];
  char data_dir[192];
  uint64_t data_digest;
  uint64_t config_digest;
  int64_t train_count, val_count;
  int32_t pid, local_replicas;
};

template <std::size_t N>
void copy_text(char (&dst)[N], const std::string& src) {
  std::memset(dst, 0, N);
  std::memcpy(dst, src.data(), std::min(N - 1, src.size()));
}

std::string host_name() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

// The settings every process must agree on (the data path may differ between machines).
uint64_t config_digest(const TrainConfig& c) {
  // --trace too: every process samples its steps for the gather at the end.
  const std::string text =
      fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", c.devices, c.batch, c.per_replica_batch, c.lr,
                  c.scale_lr, c.epochs, c.seed, c.limit_train, c.limit_val, c.backend, c.precision, c.time_phases,
                  c.trace, c.slow_replica, c.slow_factor) +
      fmt::format("|{}", c.step_delay_s);
  return digest64(text.data(), text.size());
}

uint64_t params_digest(const std::vector<float>& params) { return digest64(params.data(), params.size() * sizeof(float)); }

// Global rank 0's view of the run: running metrics, per-replica phase times, the progress
// and epoch reports. Touched by rank 0's thread only.
struct PrimaryBook {
  PrimaryBook(const RunConfig& rc, const TrainObserver& observer, RunRecord& record, int64_t steps)
      : rc(rc), observer(observer), record(record), steps(steps) {}

  void begin_epoch(int e) {
    epoch = e;
    running = {};
    last_report = -1;
    replica_times.assign(std::size_t(rc.replicas), PhaseTimes{});
    epoch_start = Clock::now();
  }

  void set_steps_per_report(int every) { steps_per_report = every; }

  // After `steps_done` steps of this epoch, `images_done` images.
  void add(const std::vector<StepReport>& all, int64_t steps_done, int64_t images_done,
           std::span<const int32_t> step_samples) {
    std::vector<PhaseTimes> report(all.size());
    for (std::size_t r = 0; r < all.size(); ++r) {
      running += all[r].stats;
      replica_times[r] += all[r].times;
      report[r] = all[r].times;
    }
    if (recent.size() == kRecentReports) recent.erase(recent.begin());
    recent.push_back(std::move(report));
    const double elapsed = seconds_since(epoch_start);
    const bool detailed = all.front().detailed != 0;
    if (!observer.on_step || (elapsed - last_report < 0.05 && steps_done != steps && !detailed)) return;
    last_report = elapsed;
    StepProgress p;
    p.epoch = epoch, p.epochs = rc.epochs, p.step = steps_done, p.steps = steps;
    p.images_done = images_done;
    p.epoch_elapsed_s = elapsed;
    p.images_per_s = elapsed > 0 ? images_done / elapsed : 0;
    p.eta_s = p.images_per_s > 0 ? (rc.train_size - images_done) / p.images_per_s : 0;
    p.running_loss = running.loss_sum / std::max<int64_t>(1, running.samples);
    p.running_acc = double(running.correct) / std::max<int64_t>(1, running.samples);
    p.recent = recent;
    p.steps_per_report = steps_per_report;
    p.epoch_times = replica_times;
    if (detailed) {
      p.has_detail = true;
      StepDetail& d = p.detail;
      d.global_batch = int64_t(step_samples.size());
      d.samples.assign(step_samples.begin(), step_samples.begin() + std::min(step_samples.size(), kDetailSamples));
      d.allreduce_bytes = double(cnn::kParamCount) * sizeof(float);
      for (const StepReport& r : all) {
        ReplicaStepDetail x;
        x.share_begin = r.share_begin;
        x.share_count = r.share_count;
        x.loss = r.share_count > 0 ? r.stats.loss_sum / double(r.stats.samples) : 0;
        x.correct = r.stats.correct;
        x.grad_norm = r.grad_norm;
        x.digest = digest_hex(r.digest);
        x.phases = r.step_times;
        d.replicas.push_back(std::move(x));
      }
    }
    observer.on_step(p);
  }

  void end_epoch(double time_s, const std::vector<EpochReport>& all) {
    EpochMetrics m;
    m.epoch = epoch;
    m.time_s = time_s;
    m.allreduce_s = replica_times[0].allreduce_s + replica_times[0].wait_s;
    m.train_loss = running.loss_sum / std::max<int64_t>(1, running.samples);
    m.train_acc = double(running.correct) / std::max<int64_t>(1, running.samples);
    m.images_per_s = running.samples / std::max(1e-9, time_s);
    BatchStats v;
    for (const auto& r : all) v += r.val;
    m.val_loss = v.loss_sum / std::max<int64_t>(1, v.samples);
    m.val_acc = double(v.correct) / std::max<int64_t>(1, v.samples);
    m.replica_times = replica_times;
    m.param_digest = digest_hex(all[0].digest);
    record.epochs.push_back(m);
    log_line(observer, LogLevel::Info,
             fmt::format("epoch {}/{}: {:.2f} s ({:.0f} img/s, all-reduce {:.1f} %), loss {:.4f}, acc {:.4f}, "
                         "val_loss {:.4f}, val_acc {:.4f}",
                         m.epoch, rc.epochs, m.time_s, m.images_per_s,
                         100.0 * m.allreduce_s / std::max(1e-9, m.time_s), m.train_loss, m.train_acc, m.val_loss,
                         m.val_acc));
    if (observer.on_epoch) observer.on_epoch(m);
  }

  const RunConfig& rc;
  const TrainObserver& observer;
  RunRecord& record;
  const int64_t steps;
  int epoch = 0;
  Clock::time_point epoch_start;
  double last_report = -1;
  int steps_per_report = 1;
  BatchStats running;
  std::vector<PhaseTimes> replica_times;
  std::vector<std::vector<PhaseTimes>> recent;   // the last reports, oldest first
};

// MirroredStrategy's invariant, checked on every rank from the same gathered digests (so
// every rank takes the same decision): identical updates keep identical weights, bit for bit.
std::string out_of_sync_message(const std::vector<EpochReport>& all, int epoch) {
  std::vector<int> differ;
  for (std::size_t r = 1; r < all.size(); ++r)
    if (all[r].digest != all[0].digest) differ.push_back(static_cast<int>(r));
  if (differ.empty()) return {};
  return fmt::format("replicas out of sync after epoch {}: the parameters of replica(s) {} differ from replica 0's "
                     "(digest {} vs {})",
                     epoch, fmt::join(differ, ", "), digest_hex(all[std::size_t(differ[0])].digest),
                     digest_hex(all[0].digest));
}

}  // namespace

int64_t replica_share_begin(int64_t batch, int replicas, int replica) {
  const int64_t base = batch / replicas, extra = batch % replicas;
  return replica * base + std::min<int64_t>(replica, extra);
}

std::vector<DeviceSpec> check_train_config(const TrainConfig& config, int processes) {
  const auto devices = parse_devices(config.devices);
  MB_CHECK(processes >= 1, ConfigError, "a run needs at least one process (got {})", processes);
  const int n = static_cast<int>(devices.size()) * processes;
  engine_backend_name(devices.front().kind, config.backend);  // throws for an unknown backend
  // The CPU engines compute in FP32 only: a tf32 request there would record a precision the
  // run did not use, so it is refused rather than ignored.
  MB_CHECK(parse_precision(config.precision) == Precision::Fp32 || devices.front().kind == DeviceKind::Cuda,
           ConfigError, "--precision {} needs GPU replicas (cuda:...); the CPU engines compute in fp32 only",
           config.precision);
  MB_CHECK(config.epochs >= 1, ConfigError, "--epochs must be at least 1 (got {})", config.epochs);
  MB_CHECK(config.batch >= 1, ConfigError, "--batch must be at least 1 (got {})", config.batch);
  // Before the multiplication below, which would overflow for absurd --batch values.
  MB_CHECK(config.batch <= kMaxGlobalBatch, ConfigError, "--batch {} is larger than the supported {}",
           config.batch, kMaxGlobalBatch);
  // The learning rate (after scaling) must survive the conversion to float.
  const double lr = config.scale_lr ? config.lr * n : config.lr;
  MB_CHECK(std::isfinite(config.lr) && config.lr > 0 && lr <= 1e6, ConfigError,
           "--lr must be a positive number no larger than 1e6 (got {})", config.lr);
  MB_CHECK(config.limit_train >= 0 && config.limit_val >= 0, ConfigError, "sample limits must not be negative");
  const int64_t global = config.per_replica_batch ? config.batch * n : config.batch;
  MB_CHECK(global >= n, ConfigError,
           "global batch {} is smaller than the {} replicas: every replica needs at least one sample "
           "(use a batch of at least {} or --per-replica-batch)",
           global, n, n);
  MB_CHECK(global <= kMaxGlobalBatch, ConfigError, "global batch {} is larger than the supported {}", global,
           kMaxGlobalBatch);
  MB_CHECK(std::isfinite(config.step_delay_s) && config.step_delay_s >= 0 && config.step_delay_s <= 60, ConfigError,
           "the teaching pace must be 0..60 s per step (got {})", config.step_delay_s);
  MB_CHECK(config.timeout_s > 0 && config.timeout_s <= 86400, ConfigError, "--timeout must be more than 0 and at most 86400 s (got {})",
           config.timeout_s);
  if (config.slow_replica >= 0) {
    MB_CHECK(config.slow_replica < n, ConfigError, "--slow-replica {}: the run has replicas 0..{}",
             config.slow_replica, n - 1);
    MB_CHECK(std::isfinite(config.slow_factor) && config.slow_factor >= 1.0 && config.slow_factor <= 100.0,
             ConfigError, "--slow-replica: the factor must be in 1..100 (got {})", config.slow_factor);
    MB_CHECK(devices.front().kind == DeviceKind::Cpu, ConfigError,
             "--slow-replica simulates a straggler on CPU replicas only (a GPU step runs ahead of the host)");
  }
  return devices;
}

uint64_t data_digest(const DataSplit& data) {
  Digest d;
  for (const Dataset* s : {&data.train, &data.val}) {
    const int64_t shape[3] = {s->count, s->rows, s->cols};
    d.add(shape, sizeof shape).add(s->pixels.data(), s->pixels.size()).add(s->labels.data(), s->labels.size());
  }
  return d.value();
}

MirroredTrainer::MirroredTrainer(TrainConfig config, std::shared_ptr<const DataSplit> data,
                                 std::shared_ptr<ProcessLink> link)
    : config_(std::move(config)), data_(std::move(data)), link_(std::move(link)) {
  MB_CHECK(data_ != nullptr, ConfigError, "no data set loaded");
  const ProcessInfo world = link_ ? link_->info() : ProcessInfo{};
  process_ = world.process;
  devices_ = resolve_local_gpus(check_train_config(config_, world.processes), world.local_process);
  const int local = static_cast<int>(devices_.size());
  const int n = local * world.processes;
  const int64_t global = config_.per_replica_batch ? config_.batch * n : config_.batch;
  // Checked after the arguments, so a bad argument is reported alone (no device warnings).
  const auto inventory = query_devices();
  validate_devices(devices_, inventory);

  const int64_t train_size = config_.limit_train > 0 ? std::min(config_.limit_train, data_->train.count)
                                                     : data_->train.count;
  const int64_t val_size = config_.limit_val > 0 ? std::min(config_.limit_val, data_->val.count)
                                                 : data_->val.count;
  MB_CHECK(train_size >= 1, ConfigError, "the training set '{}' is empty", data_->train.name);
  MB_CHECK(data_->train.rows == cnn::kImageSide && data_->train.cols == cnn::kImageSide, ConfigError,
           "the model needs 28x28 images, the data set has {}x{}", data_->train.rows, data_->train.cols);

  RunConfig& rc = run_config_;
  rc.hosts = {world.host.empty() ? host_name() : world.host};
  if (world.processes > 1) {
    // Every process loads the data from its own disk and parses its own command line: check
    // that they all train the same thing before any of them starts.
    ProcessWire mine{};
    copy_text(mine.host, rc.hosts[0]);
    copy_text(mine.data_dir, data_->dir.string());
    mine.data_digest = data_digest(*data_);
    mine.config_digest = config_digest(config_);
    mine.train_count = data_->train.count;
    mine.val_count = data_->val.count;
    mine.pid = static_cast<int32_t>(getpid());
    mine.local_replicas = local;
    std::vector<ProcessWire> all(static_cast<std::size_t>(world.processes));
    link_->all_gather(&mine, sizeof mine, all.data());
    rc.hosts.clear();
    std::set<std::string> seen;
    for (int p = 0; p < world.processes; ++p) {
      const ProcessWire& w = all[std::size_t(p)];
      if (seen.insert(w.host).second) rc.hosts.push_back(w.host);
      MB_CHECK(w.config_digest == all[0].config_digest && w.local_replicas == all[0].local_replicas, ConfigError,
               "process {} on host {} was started with other training options than process 0 on host {}: give "
               "every process the same command line",
               p, w.host, all[0].host);
      MB_CHECK(w.data_digest == all[0].data_digest, DataError,
               "the data set of process {} on host {} ('{}', {} training and {} validation images) differs from "
               "process 0's on host {} ('{}', {} and {} images): every process must load the same files",
               p, w.host, w.data_dir, w.train_count, w.val_count, all[0].host, all[0].data_dir, all[0].train_count,
               all[0].val_count);
    }
  }

  rc.devices = format_devices(devices_);
  if (std::any_of(devices_.begin(), devices_.end(), [](const DeviceSpec& d) { return d.kind == DeviceKind::Cuda; }) &&
      parse_devices(config_.devices).front().index == kLocalGpu)
    rc.devices = "cuda:local";
  rc.replicas = n;
  rc.processes = world.processes;
  rc.replicas_per_process = local;
  rc.simulated = is_simulated(devices_);
  rc.slow_replica = config_.slow_replica;
  rc.slow_factor = config_.slow_replica >= 0 ? config_.slow_factor : 1.0;
  rc.step_delay_s = config_.step_delay_s;
  rc.global_batch = global;
  rc.per_replica_batch = (global + n - 1) / n;
  rc.per_replica_batch_mode = config_.per_replica_batch;
  rc.epochs = config_.epochs;
  rc.base_learning_rate = config_.lr;
  rc.scale_lr = config_.scale_lr;
  rc.learning_rate = config_.scale_lr ? config_.lr * n : config_.lr;
  rc.seed = config_.seed;
  rc.dataset = data_->name;
  rc.data_dir = data_->dir.string();
  rc.train_size = train_size;
  rc.val_size = val_size;
  rc.backend = engine_backend_name(devices_.front().kind, config_.backend);
  rc.precision = to_string(parse_precision(config_.precision));
  rc.version = version();
  rc.cpu_model = inventory.cpu_name;
  for (const auto& d : devices_)
    if (d.kind == DeviceKind::Cuda)
      for (const auto& g : inventory.gpus)
        if (g.index == d.index) rc.gpu_models.push_back(g.name);
}

MirroredTrainer::~MirroredTrainer() = default;

RunRecord MirroredTrainer::run(const TrainObserver& caller_observer) {
  const RunConfig& rc = run_config_;
  const bool primary = is_primary();
  // Only process 0 reports; the others train silently.
  const TrainObserver observer = primary ? caller_observer : TrainObserver{};
  RunRecord record;
  record.config = rc;
  record.config.start_time = iso8601_now_utc();
  record.id = make_run_id(record.config);
  record.name = rc.processes > 1 ? fmt::format("{} processes x {}", rc.processes, rc.devices)
                                 : rc.devices + (rc.simulated ? " (simulated)" : "");

  const int local = rc.replicas_per_process, n = rc.replicas;
  const int64_t train_size = rc.train_size, val_size = rc.val_size, global = rc.global_batch;
  const int64_t steps = (train_size + global - 1) / global;
  AdamConfig adam;
  adam.lr = static_cast<float>(rc.learning_rate);

  std::vector<std::unique_ptr<Communicator>> comms;
  try {
    // Collective over the link. A simulated straggler makes the others wait `slow_factor` times
    // as long for it, on purpose: the deadline stretches with it.
    comms = make_communicators(devices_, link_, config_.timeout_s * std::max(1.0, rc.slow_factor));
    record.config.communicator = comms.front()->name();
  } catch (const std::exception& e) {
    if (link_) link_->request_abort(e.what());   // the other processes must not wait for this one
    record.status = RunStatus::Failed;
    record.error = e.what();
    log_line(observer, LogLevel::Error, e.what());
    return record;
  }
  log_line(observer, LogLevel::Info,
           fmt::format("training {} on {} replica(s) [{}{}], global batch {}, lr {}, {} step(s)/epoch, comm {}",
                       rc.dataset, n, rc.devices, rc.processes > 1 ? fmt::format(" in each of {} processes", rc.processes) : "",
                       global, rc.learning_rate, steps, record.config.communicator));
  if (observer.on_start) observer.on_start(record.config);

  // CPU replicas each get a core of their own: this process's share of the host's cores when
  // the launcher left the processes unbound, else (bound, or alone) its own.
  const CpuPlacement placement = cpu_placement();
  const ProcessInfo world = link_ ? link_->info() : ProcessInfo{};
  auto cpu_for = [&](int l) {
    const std::size_t cpus = placement.order.size();
    if (std::size_t(world.local_processes) * local <= cpus) return placement.order[std::size_t(world.local_process * local + l)];
    if (std::size_t(local) <= cpus) return placement.order[std::size_t(l)];
    return -1;
  };
  const bool cpu_run = devices_.front().kind == DeviceKind::Cpu;
  // (More replicas than CPUs was already warned about by validate_devices; under a launcher
  // that is usually its binding, which is worth saying how to change.)
  if (cpu_run && cpu_for(0) < 0 && world.processes > 1)
    log_line(observer, LogLevel::Warning,
             fmt::format("process {} may run on {} CPU(s) but has {} replicas: start mpirun with --bind-to none "
                         "(or --map-by socket:PE={}) so each replica gets a core",
                         world.process, placement.order.size(), local, local));
  if (cpu_run && cpu_for(0) >= 0 && local > placement.physical_cores)
    spdlog::info("{} CPU replicas on {} physical core(s): some share a core with its SMT sibling and run slower",
                 local, placement.physical_cores);

  std::vector<int32_t> val_order(static_cast<std::size_t>(val_size));
  std::iota(val_order.begin(), val_order.end(), 0);
  PrimaryBook book(rc, observer, record, steps);
  std::vector<std::unique_ptr<ReplicaEngine>> engines(static_cast<std::size_t>(local));
  std::mutex error_mutex;
  std::string first_error, in_sync_error;
  bool stopped = false;

  auto fail = [&](const std::string& what) {
    {
      std::lock_guard lock(error_mutex);
      if (first_error.empty()) first_error = what;
    }
    for (auto& c : comms) c->abort(what);
  };

  // One replica's life. The replicas of all processes meet only in their communicators'
  // collectives; every decision is taken from data every rank has gathered.
  auto replica_main = [&](int l) {
    Communicator& comm = *comms[std::size_t(l)];
    const int rank = comm.rank();
    std::string who = fmt::format("replica {}", rank);
    try {
      if (cpu_run && cpu_for(l) >= 0) pin_current_thread(cpu_for(l));
      const int max_batch = static_cast<int>(rc.per_replica_batch);
      auto engine_ptr = engine_factory_ ? engine_factory_(devices_[std::size_t(l)], max_batch)
                                        : make_engine(devices_[std::size_t(l)], config_.backend, max_batch,
                                                      parse_precision(rc.precision));
      if (rank == rc.slow_replica) engine_ptr = make_straggler(std::move(engine_ptr), rc.slow_factor);
      engines[std::size_t(l)] = std::move(engine_ptr);
      ReplicaEngine& engine = *engines[std::size_t(l)];
      who = fmt::format("replica {} ({})", rank, engine.device_name());
      comm.connect();
      engine.bind_data(data_->train, data_->val);

      // Rank 0's initial weights, broadcast: every replica starts from the same bits.
      std::vector<float> params(cnn::kParamCount);
      if (rank == 0) cnn::init_params(params, rc.seed);
      comm.broadcast(std::span<float>(params), 0);
      engine.set_params(params);

      // Every shape of the run, prepared before the clock starts.
      const auto warm_start = Clock::now();
      std::vector<ReplicaEngine::StepShape> shapes;
      for (const int64_t b : {global, train_size % global}) {
        if (b == 0 || (!shapes.empty() && shapes.front().global_batch == b)) continue;
        shapes.push_back({replica_share_begin(b, n, rank + 1) - replica_share_begin(b, n, rank), b});
      }
      engine.warm_up(shapes, comm);
      comm.barrier();
      comm.take_times();
      if (rank == 0) {
        record.warmup_s = seconds_since(warm_start);
        record.comm = engine.comm_profile();
        record.engine = engine.engine_report();
      }
      const auto run_start = Clock::now();   // the traces' common zero: everyone just left the barrier

      const int every = config_.step_delay_s > 0 ? 1 : std::max(1, engine.steps_per_report());
      const int64_t detail_every = std::max<int64_t>(every, kDetailEvery);
      if (rank == 0) book.set_steps_per_report(every);
      // Sampled steps for the trace: every `stride`-th step of the run, at most kMaxTraceSteps.
      const int64_t total_steps = steps * rc.epochs;
      const int64_t stride = std::max<int64_t>(1, (total_steps + kMaxTraceSteps - 1) / kMaxTraceSteps);
      const std::size_t trace_capacity = config_.trace ? std::size_t(total_steps / stride + 1) : 0;
      std::vector<TraceStep> trace;
      trace.reserve(trace_capacity);
      int64_t run_step = 0;
      int64_t adam_step = 0;
      bool stop = false;
      for (int e = 1; e <= rc.epochs && !stop; ++e) {
        const std::vector<int32_t> order = epoch_order(train_size, rc.seed, e);
        engine.begin_epoch(order);
        if (rank == 0) book.begin_epoch(e);
        PhaseTimes since;
        int64_t s = 0;
        while (s < steps) {
          const int64_t b0 = s * global, b = std::min(global, train_size - b0);
          const int64_t lo = replica_share_begin(b, n, rank), hi = replica_share_begin(b, n, rank + 1);
          TrainStep step;
          step.indices = std::span<const int32_t>(order.data() + b0 + lo, static_cast<std::size_t>(hi - lo));
          step.order_offset = b0 + lo;
          step.global_batch = b;
          step.grad_scale = 1.0f / static_cast<float>(b);
          step.adam_step = ++adam_step;
          step.time_phases = config_.time_phases;
          const bool traced = config_.trace && run_step++ % stride == 0 && trace.size() < trace_capacity;
          const bool report = (s + 1) % every == 0 || s + 1 == steps;
          // The same steps on every rank: the choice depends on the step number only.
          const bool detailed = report && (config_.step_delay_s > 0 || (s + 1) % detail_every == 0);
          double grad_norm = std::nan("");
          if (detailed) step.local_grad_norm = &grad_norm;
          const PhaseTimes before = since;
          const auto step_start = Clock::now();
          const double started = traced ? std::chrono::duration<double>(step_start - run_start).count() : 0.0;
          engine.train_step(step, comm, adam, since);
          ++s;
          if (traced) trace.push_back({started, since - before, e, static_cast<int32_t>(s)});
          if (!report) continue;
          StepReport mine;
          mine.stats = engine.take_train_stats();
          mine.times = since;
          mine.stop = stop_.load() ? 1 : 0;
          if (detailed) {
            mine.detailed = 1;
            mine.grad_norm = grad_norm;
            engine.get_params(params);
            mine.digest = params_digest(params);
            mine.share_begin = lo;
            mine.share_count = hi - lo;
            mine.step_times = since - before;
          }
          const auto all = comm.all_gather(mine);
          // The exchange itself is step time too: it opens the next report's account.
          const CollectiveTimes ct = comm.take_times();
          since = PhaseTimes{};
          since.wait_s = ct.wait_s;
          since.allreduce_s = ct.transfer_s;
          if (rank == 0)
            book.add(all, s, std::min(train_size, s * global),
                     std::span<const int32_t>(order.data() + b0, static_cast<std::size_t>(b)));
          stop = std::any_of(all.begin(), all.end(), [](const StepReport& r) { return r.stop != 0; });
          if (stop) break;
          // Teaching pace: the step lasts at least step_delay_s (every rank waits alike).
          if (config_.step_delay_s > 0) {
            const auto until = step_start + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(config_.step_delay_s));
            while (Clock::now() < until && !stop_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
        }
        engine.synchronize();
        const double time_s = rank == 0 ? seconds_since(book.epoch_start) : 0.0;
        if (s < steps) break;  // stopped mid-epoch: a partial epoch is not reported as an epoch

        // Validation: each replica evaluates its contiguous share of the validation set.
        EpochReport mine;
        const int64_t vlo = replica_share_begin(val_size, n, rank), vhi = replica_share_begin(val_size, n, rank + 1);
        mine.val = engine.evaluate(std::span<const int32_t>(val_order.data() + vlo, std::size_t(vhi - vlo)));
        engine.get_params(params);
        mine.digest = params_digest(params);
        mine.stop = stop_.load() ? 1 : 0;
        const auto all = comm.all_gather(mine);
        comm.take_times();   // validation is not training time
        const std::string sync_error = out_of_sync_message(all, e);
        if (rank == 0) {
          book.end_epoch(time_s, all);
          if (!sync_error.empty()) record.replicas_in_sync = false;
        }
        if (!sync_error.empty()) {
          std::lock_guard lock(error_mutex);
          if (in_sync_error.empty()) in_sync_error = sync_error;
        }
        stop = stop || !sync_error.empty() ||
               std::any_of(all.begin(), all.end(), [](const EpochReport& r) { return r.stop != 0; });
      }
      if (config_.trace) {
        // Fixed-size blocks (every rank computed the same capacity); step 0 marks the end.
        trace.resize(trace_capacity);
        std::vector<TraceStep> all(trace_capacity * std::size_t(n));
        comm.all_gather_bytes(trace.data(), trace_capacity * sizeof(TraceStep), all.data());
        if (rank == 0) {
          trace_.assign(std::size_t(n), {});
          for (int r = 0; r < n; ++r)
            for (std::size_t k = 0; k < trace_capacity; ++k) {
              const TraceStep& t = all[std::size_t(r) * trace_capacity + k];
              if (t.step > 0) trace_[std::size_t(r)].push_back(t);
            }
        }
      }
      std::lock_guard lock(error_mutex);
      if (l == 0) stopped = stop;      // the same decision on every rank
      if (rank == 0) {
        if (in_sync_error.empty()) {   // no checkpoint of diverged replicas
          final_params_.resize(cnn::kParamCount);
          engine.get_params(final_params_);
        }
      }
    } catch (const BarrierAborted&) {
      // Another replica failed first; its message is the one to report.
    } catch (const PeerFailure& e) {
      fail(e.what());   // already names the process at fault
    } catch (const std::exception& e) {
      fail(fmt::format("{}: {}", who, e.what()));
    } catch (...) {
      // Anything escaping a std::thread's function is std::terminate.
      fail(fmt::format("{}: unknown exception", who));
    }
    // On this thread, after any failure is known: a destructor stuck in the driver (a device
    // that never finishes) is then a stuck replica the bounded join reports (replica_threads.h).
    engines[std::size_t(l)].reset();
  };

  // Every replica gets a fresh thread (replica 0 too): pinning must not leak into the
  // caller's thread, which may be a GUI worker or the CLI's main thread.
  ReplicaThreads threads(local);
  int started = 0;
  try {
    for (; started < local; ++started) threads.start(started, [&replica_main, started] { replica_main(started); });
  } catch (const std::exception& e) {
    // The replicas already started wait in their first collective: release them, then join.
    fail(fmt::format("cannot start a thread for replica {}: {}", started, e.what()));
  }
  // Bounded once the run failed: a thread stuck in a driver call is reported, not waited for
  // in silence (replica_threads.h).
  const double grace_s = 2 * config_.timeout_s;
  threads.join([&] { std::lock_guard lock(error_mutex); return !first_error.empty(); }, grace_s,
               [&](const std::vector<int>& stuck) {
                 std::vector<int> ranks;
                 for (int l : stuck) ranks.push_back(comms[std::size_t(l)]->rank());
                 RunRecord failed = record;
                 failed.status = RunStatus::Failed;
                 {
                   std::lock_guard lock(error_mutex);
                   failed.error = first_error + "; " + stuck_threads_message(ranks, grace_s);
                 }
                 log_line(observer, LogLevel::Error, "run failed: " + failed.error);
                 if (observer.on_stuck) observer.on_stuck(failed);
               });
  // Engines before communicators: a captured CUDA graph holds NCCL collectives, and NCCL
  // will not destroy a communicator such a graph still uses.
  engines.clear();
  comms.clear();

  if (first_error.empty()) first_error = in_sync_error;
  if (!first_error.empty()) {
    record.status = RunStatus::Failed;
    record.error = first_error;
    log_line(observer, LogLevel::Error, "run failed: " + first_error);
  } else if (stopped && static_cast<int>(record.epochs.size()) < rc.epochs) {
    record.status = RunStatus::Stopped;
    log_line(observer, LogLevel::Info, fmt::format("run stopped after {} complete epoch(s)", record.epochs.size()));
  }
  return record;
}

}  // namespace mb
