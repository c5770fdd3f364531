// The mirrored trainer: one thread per replica, lock-step through the epoch. Each step every
// replica trains on its share of the global batch, the engines all-reduce the gradients and
// apply the same Adam step; a barrier then folds the replicas' metrics into the running
// totals, reports progress and decides (once, for everyone) whether to stop.
#include "trainer/mirrored_trainer.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

#include <spdlog/spdlog.h>

#include "backends/devices.h"
#include "model/cnn_spec.h"
#include "util/error.h"
#include "util/random.h"
#include "util/spin_barrier.h"
#include "util/system_info.h"

namespace mb {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kMaxGlobalBatch = 65536;
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

void pin_to_core(int core) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  // The core-th CPU this process may use.
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (seen++ == core) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      pthread_setaffinity_np(pthread_self(), sizeof one, &one);
      return;
    }
  }
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

// The bookkeeping the replicas share during a run: the epoch's data order, the replicas'
// per-step results, running metrics, the stop decision. Its methods run only inside barrier
// completion steps (one thread, the others waiting), which order every access.
struct EpochBook {
  EpochBook(const RunConfig& rc, const TrainObserver& observer, const std::atomic<bool>& stop_requested,
            RunRecord& record, int64_t steps)
      : rc(rc), observer(observer), stop_requested(stop_requested), record(record), steps(steps),
        slot(rc.replicas), timing(rc.replicas), params_seen(rc.replicas, std::vector<float>(cnn::kParamCount)) {}

  void begin_epoch(int e) {
    epoch = e;
    order = epoch_order(rc.train_size, rc.seed, e);
    running_loss = 0, running_correct = 0, running_seen = 0, last_report = -1;
    for (auto& t : timing) t = {};
    epoch_start = Clock::now();
  }

  // After step s (0-based), with `images_done` images of this epoch trained.
  void end_step(int64_t s, int64_t images_done) {
    for (const auto& st : slot) running_loss += st.loss_sum, running_correct += st.correct, running_seen += st.samples;
    const double elapsed = seconds_since(epoch_start);
    if (observer.on_step && (elapsed - last_report >= 0.05 || s + 1 == steps)) {
      last_report = elapsed;
      StepProgress p;
      p.epoch = epoch, p.epochs = rc.epochs, p.step = s + 1, p.steps = steps;
      p.images_done = images_done;
      p.epoch_elapsed_s = elapsed;
      p.images_per_s = elapsed > 0 ? images_done / elapsed : 0;
      p.eta_s = p.images_per_s > 0 ? (rc.train_size - images_done) / p.images_per_s : 0;
      p.running_loss = running_loss / std::max<int64_t>(1, running_seen);
      p.running_acc = double(running_correct) / std::max<int64_t>(1, running_seen);
      observer.on_step(p);
    }
    if (stop_requested.load()) stop_now = true;
  }

  void end_training() {
    metrics = EpochMetrics{};
    metrics.epoch = epoch;
    metrics.time_s = seconds_since(epoch_start);
    metrics.allreduce_s = timing[0].allreduce_s;
    metrics.train_loss = running_loss / std::max<int64_t>(1, running_seen);
    metrics.train_acc = double(running_correct) / std::max<int64_t>(1, running_seen);
    metrics.images_per_s = running_seen / std::max(1e-9, metrics.time_s);
  }

  void end_validation() {
    BatchStats v;
    for (const auto& st : slot) v.loss_sum += st.loss_sum, v.correct += st.correct, v.samples += st.samples;
    metrics.val_loss = v.loss_sum / std::max<int64_t>(1, v.samples);
    metrics.val_acc = double(v.correct) / std::max<int64_t>(1, v.samples);
    check_replicas_in_sync();
    record.epochs.push_back(metrics);
    const EpochMetrics& m = metrics;
    log_line(observer, LogLevel::Info,
             fmt::format("epoch {}/{}: {:.2f} s ({:.0f} img/s, all-reduce {:.1f} %), loss {:.4f}, acc {:.4f}, "
                         "val_loss {:.4f}, val_acc {:.4f}",
                         m.epoch, rc.epochs, m.time_s, m.images_per_s,
                         100.0 * m.allreduce_s / std::max(1e-9, m.time_s), m.train_loss, m.train_acc, m.val_loss,
                         m.val_acc));
    if (observer.on_epoch) observer.on_epoch(m);
    if (!record.replicas_in_sync || stop_requested.load()) stop_now = true;
  }

  // MirroredStrategy's invariant: identical updates keep identical weights, bit for bit.
  void check_replicas_in_sync() {
    for (int q = 1; q < rc.replicas; ++q) {
      if (std::memcmp(params_seen[q].data(), params_seen[0].data(), cnn::kParamCount * sizeof(float)) == 0) continue;
      double worst = 0;
      for (std::size_t i = 0; i < cnn::kParamCount; ++i)
        worst = std::max(worst, double(std::fabs(params_seen[q][i] - params_seen[0][i])));
      record.replicas_in_sync = false;
      if (in_sync_error.empty())
        in_sync_error = fmt::format("replicas out of sync after epoch {}: replica {} differs from replica 0 by up to {:.3g}",
                                    epoch, q, worst);
    }
  }

  const RunConfig& rc;
  const TrainObserver& observer;
  const std::atomic<bool>& stop_requested;
  RunRecord& record;
  const int64_t steps;

  std::vector<BatchStats> slot;                  // one per replica, written by that replica
  std::vector<StepTiming> timing;                // likewise
  std::vector<std::vector<float>> params_seen;   // likewise, for the in-sync check
  std::vector<int32_t> order;                    // this epoch's training order
  bool stop_now = false;
  std::string in_sync_error;

  int epoch = 0;
  EpochMetrics metrics;
  Clock::time_point epoch_start;
  double running_loss = 0, last_report = -1;
  int64_t running_correct = 0, running_seen = 0;
};

}  // namespace

int64_t replica_share_begin(int64_t batch, int replicas, int replica) {
  const int64_t base = batch / replicas, extra = batch % replicas;
  return replica * base + std::min<int64_t>(replica, extra);
}

std::vector<DeviceSpec> check_train_config(const TrainConfig& config) {
  const auto devices = parse_devices(config.devices);
  const int n = static_cast<int>(devices.size());
  engine_backend_name(devices.front().kind, config.backend);  // throws for an unknown backend
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
  return devices;
}

MirroredTrainer::MirroredTrainer(TrainConfig config, std::shared_ptr<const DataSplit> data)
    : config_(std::move(config)), data_(std::move(data)) {
  MB_CHECK(data_ != nullptr, ConfigError, "no data set loaded");
  const auto devices = check_train_config(config_);
  const int n = static_cast<int>(devices.size());
  const int64_t global = config_.per_replica_batch ? config_.batch * n : config_.batch;
  // Checked after the arguments, so a bad argument is reported alone (no device warnings).
  const auto inventory = query_devices();
  validate_devices(devices, inventory);

  const int64_t train_size = config_.limit_train > 0 ? std::min(config_.limit_train, data_->train.count)
                                                     : data_->train.count;
  const int64_t val_size = config_.limit_val > 0 ? std::min(config_.limit_val, data_->val.count)
                                                 : data_->val.count;
  MB_CHECK(train_size >= 1, ConfigError, "the training set '{}' is empty", data_->train.name);
  MB_CHECK(data_->train.rows == cnn::kImageSide && data_->train.cols == cnn::kImageSide, ConfigError,
           "the model needs 28x28 images, the data set has {}x{}", data_->train.rows, data_->train.cols);

  RunConfig& rc = run_config_;
  rc.devices = format_devices(devices);
  rc.replicas = n;
  rc.simulated = is_simulated(devices);
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
  rc.backend = engine_backend_name(devices.front().kind, config_.backend);
  rc.version = version();
  rc.cpu_model = inventory.cpu_name;
  for (const auto& d : devices)
    if (d.kind == DeviceKind::Cuda)
      for (const auto& g : inventory.gpus)
        if (g.index == d.index) rc.gpu_models.push_back(g.name);
}

MirroredTrainer::~MirroredTrainer() = default;

RunRecord MirroredTrainer::run(const TrainObserver& observer) {
  const RunConfig& rc = run_config_;
  RunRecord record;
  record.config = rc;
  record.config.start_time = iso8601_now_utc();
  record.id = make_run_id(record.config);
  record.name = rc.devices + (rc.simulated ? " (simulated)" : "");

  const auto devices = parse_devices(rc.devices);
  const int n = rc.replicas;
  const int64_t train_size = rc.train_size, val_size = rc.val_size, global = rc.global_batch;
  const int64_t steps = (train_size + global - 1) / global;
  AdamConfig adam;
  adam.lr = static_cast<float>(rc.learning_rate);

  std::vector<std::unique_ptr<ReplicaEngine>> engines;
  std::unique_ptr<Communicator> comm;
  try {
    for (const auto& d : devices) engines.push_back(make_engine(d, config_.backend, static_cast<int>(rc.per_replica_batch)));
    comm = make_communicator(devices);
    record.config.communicator = comm->name();
    log_line(observer, LogLevel::Info,
             fmt::format("training {} on {} replica(s) [{}], global batch {}, lr {}, {} step(s)/epoch, comm {}",
                         rc.dataset, n, rc.devices, global, rc.learning_rate, steps, comm->name()));
  } catch (const std::exception& e) {
    record.status = RunStatus::Failed;
    record.error = e.what();
    log_line(observer, LogLevel::Error, e.what());
    return record;
  }
  if (observer.on_start) observer.on_start(record.config);

  // Replica 0's initial weights, copied to every replica (the in-process broadcast).
  std::vector<float> initial(cnn::kParamCount);
  cnn::init_params(initial, rc.seed);

  SpinBarrier barrier(n);
  EpochBook book(rc, observer, stop_, record, steps);
  std::vector<int32_t> val_order(static_cast<std::size_t>(val_size));
  std::iota(val_order.begin(), val_order.end(), 0);
  std::mutex error_mutex;
  std::string first_error;

  auto fail = [&](const std::string& what) {
    {
      std::lock_guard lock(error_mutex);
      if (first_error.empty()) first_error = what;
    }
    barrier.abort();
    comm->abort();
  };

  // One replica's life. Each barrier's completion step runs on one thread while the others
  // wait, so EpochBook needs no locks; replicas write only their own slots.
  auto replica_main = [&](int r) {
    try {
      if (devices[r].kind == DeviceKind::Cpu && n <= cpu_core_count()) pin_to_core(r);
      ReplicaEngine& engine = *engines[r];
      engine.bind_data(data_->train, data_->val);
      engine.set_params(initial);
      int64_t adam_step = 0;

      for (int e = 1; e <= rc.epochs && !book.stop_now; ++e) {
        barrier.arrive_and_wait([&] { book.begin_epoch(e); });
        int64_t s = 0;
        for (; s < steps && !book.stop_now; ++s) {
          const int64_t b0 = s * global, b = std::min(global, train_size - b0);
          const int64_t lo = replica_share_begin(b, n, r), hi = replica_share_begin(b, n, r + 1);
          std::span<const int32_t> mine(book.order.data() + b0 + lo, static_cast<std::size_t>(hi - lo));
          book.slot[r] = engine.train_step(mine, 1.0f / static_cast<float>(b), *comm, r, adam, ++adam_step,
                                           book.timing[r]);
          barrier.arrive_and_wait([&] { book.end_step(s, b0 + b); });
        }
        engine.synchronize();
        barrier.arrive_and_wait([&] { book.end_training(); });
        if (s < steps) break;  // stopped mid-epoch: a partial epoch is not reported as an epoch

        // Validation: each replica evaluates its contiguous share of the validation set.
        const int64_t vlo = replica_share_begin(val_size, n, r), vhi = replica_share_begin(val_size, n, r + 1);
        book.slot[r] = engine.evaluate(std::span<const int32_t>(val_order.data() + vlo, std::size_t(vhi - vlo)));
        engine.get_params(book.params_seen[r]);
        barrier.arrive_and_wait([&] { book.end_validation(); });
      }
      if (r == 0 && book.in_sync_error.empty()) {  // no checkpoint of diverged replicas
        final_params_.resize(cnn::kParamCount);
        engine.get_params(final_params_);
      }
    } catch (const BarrierAborted&) {
      // Another replica failed first; its message is the one to report.
    } catch (const std::exception& e) {
      fail(fmt::format("{}: {}", engines[r]->device_name(), e.what()));
    } catch (...) {
      // Anything escaping a std::thread's function is std::terminate.
      fail(fmt::format("{}: unknown exception", engines[r]->device_name()));
    }
  };

  // Every replica gets a fresh thread (replica 0 too): pinning must not leak into the
  // caller's thread, which may be a GUI worker or the CLI's main thread.
  std::vector<std::thread> threads;
  try {
    for (int r = 0; r < n; ++r) threads.emplace_back(replica_main, r);
  } catch (const std::exception& e) {
    // The replicas already started wait at the first barrier: release them, then join
    // (destroying a joinable std::thread is std::terminate).
    fail(fmt::format("cannot start a thread for replica {}: {}", threads.size(), e.what()));
  }
  for (auto& t : threads) t.join();

  if (first_error.empty()) first_error = book.in_sync_error;
  if (!first_error.empty()) {
    record.status = RunStatus::Failed;
    record.error = first_error;
    log_line(observer, LogLevel::Error, "run failed: " + first_error);
  } else if (book.stop_now && static_cast<int>(record.epochs.size()) < rc.epochs) {
    record.status = RunStatus::Stopped;
    log_line(observer, LogLevel::Info, fmt::format("run stopped after {} complete epoch(s)", record.epochs.size()));
  }
  return record;
}

}  // namespace mb
