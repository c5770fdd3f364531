// One replica's life in a run (see replica_loop.h).
#include "trainer/replica_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <thread>

#include <fmt/format.h>

#include "backends/devices.h"
#include "backends/straggler_engine.h"
#include "comm/gradient_buckets.h"
#include "comm/process_link.h"
#include "model/init_params.h"
#include "optim/lr_schedule.h"
#include "trainer/input_pipeline.h"
#include "trainer/trace_sampler.h"
#include "util/cpu_topology.h"
#include "util/digest.h"
#include "util/error.h"
#include "util/random.h"
#include "util/spin_barrier.h"

namespace mb {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kDetailEvery = 16;       // steps between detailed steps (each one, at teaching pace)
constexpr std::size_t kLoggedShareChanges = 12;   // share changes logged (with the initial shares)

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

uint64_t params_digest(const std::vector<float>& params) { return digest64(params.data(), params.size() * sizeof(float)); }

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

// Teaching pace: a step lasts at least `delay_s` (every rank waits alike), unless a stop is asked.
void pace(Clock::time_point step_start, double delay_s, const std::atomic<bool>& stop) {
  if (delay_s <= 0) return;
  const auto until = step_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(delay_s));
  while (Clock::now() < until && !stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

class ReplicaLoop {
 public:
  ReplicaLoop(ReplicaShared& shared, int local)
      : in_(shared.in), account_(shared.account), shared_(shared), rc_(shared.in.run.config), local_(local),
        comm_(*shared.per_replica.comms[std::size_t(local)]), rank_(comm_.rank()), n_(rc_.replicas),
        who_(fmt::format("replica {}", rank_)), shares_(rc_, shared.in.run.replay_shares),
        trace_(shared.in.run.trace, shared.in.run.steps_per_epoch() * rc_.epochs) {}

  void run() {
    prepare();
    bool stop = false;
    for (int e = 1; e <= rc_.epochs && !stop; ++e) {
      const std::vector<int32_t> order = epoch_order(rc_.train_size, rc_.seed, e);
      engine_->begin_epoch(order);
      if (input_) input_->begin_epoch(in_.run.steps_per_epoch(), [this](int64_t s) { return input_images(s); });
      engine_->set_dropout_key(DropoutKey{rc_.seed, e});   // dropout masks: (seed, epoch, sample, layer, element)
      if (rank_ == 0) account_.book.begin_epoch(e);
      const bool whole = train_epoch(order, e, stop);
      engine_->synchronize();
      const double time_s = rank_ == 0 ? account_.book.epoch_elapsed_s() : 0.0;
      // The engine's report counts the steps that replayed a graph and those that ran
      // eagerly: the record follows it epoch by epoch (a failed run keeps the last count).
      if (rank_ == 0) account_.record.engine_reported(engine_->engine_report());
      if (!whole) break;   // stopped mid-epoch: a partial epoch is not reported as an epoch
      stop = end_epoch(e, time_s) || stop;
    }
    std::vector<std::vector<TraceStep>> trace = in_.run.trace ? trace_.gather(comm_) : decltype(trace){};
    if (local_ == 0 && stop) account_.record.stopped();
    if (rank_ != 0) return;
    shared_.left.trace = std::move(trace);
    if (account_.record.in_sync()) {   // no checkpoint of diverged replicas
      shared_.left.final_params.resize(in_.run.model.param_count());
      engine_->get_params(shared_.left.final_params);
    }
  }

  const std::string& who() const { return who_; }

 private:
  // The engine, rank 0's weights, and every step shape prepared before the clock starts.
  void prepare() {
    if (device_kind(in_.run.devices) == DeviceKind::Cpu && in_.cpu_for(local_) >= 0) pin_current_thread(in_.cpu_for(local_));
    make_engine_here();
    comm_.connect();
    // A one-rank NCCL that could not initialise has fallen back to the in-GPU communicator
    // (backends/common/nccl_fallback.h): the record names what the run used.
    if (rank_ == 0) {
      const std::string before = account_.record.communicator();
      if (account_.record.connected(comm_.name()))
        log_line(account_.book.observer(), LogLevel::Warning,
                 fmt::format("communicator: {} instead of {}", comm_.name(), before));
    }
    engine_->bind_data(in_.data.train, in_.data.val);

    // Rank 0's initial weights, broadcast: every replica starts from the same bits.
    params_.resize(in_.run.model.param_count());
    if (rank_ == 0) init_params(in_.run.model, params_, rc_.seed);
    comm_.broadcast(std::span<float>(params_), 0);
    engine_->set_params(params_);
    adam_.lr = static_cast<float>(rc_.learning_rate);
    const int64_t optimizer_steps = (in_.run.steps_per_epoch() + std::max(1, rc_.scenario.accumulate) - 1) /
                                    std::max(1, rc_.scenario.accumulate);
    if (rc_.scenario.bucket_mb > 0) buckets_ = gradient_buckets(in_.run.model.shape(), rc_.scenario.bucket_mb);
    warmup_ = {rc_.base_learning_rate, rc_.learning_rate,
               int64_t(std::ceil(rc_.scenario.lr_warmup_epochs * double(optimizer_steps)))};

    const auto warm_start = Clock::now();
    std::vector<ReplicaEngine::StepShape> shapes;
    const int64_t global = rc_.global_batch;
    for (const int64_t b : {global, rc_.train_size % global}) {
      if (b == 0 || (!shapes.empty() && shapes.front().global_batch == b)) continue;
      shapes.push_back({shares_.begin(b, rank_ + 1) - shares_.begin(b, rank_), b});
    }
    engine_->warm_up(shapes, comm_);
    comm_.barrier();
    comm_.take_times();
    if (rank_ == 0) {
      if (const auto first = shares_.start()) account_.record.shares_changed(first->step, first->shares);
      account_.record.warmed_up(seconds_since(warm_start), engine_->comm_profile(), engine_->engine_report());
    }
    run_start_ = Clock::now();   // the traces' common zero: everyone just left the barrier

    // The input pipeline runs only with an input cost: the data is resident, so without one
    // the loaders would have nothing to do (and plain runs pay nothing for them).
    if (const InputPipeline::Cost cost{rc_.scenario.input.latency_ms * 1e-3, rc_.scenario.input.cpu_ms * 1e-3};
        rc_.scenario.input.costs())
      input_ = std::make_unique<InputPipeline>(rc_.scenario.input.loaders, rc_.scenario.input.prefetch, cost);

    every_ = rc_.step_delay_s > 0 ? 1 : std::max(1, engine_->steps_per_report());
    if (rank_ == 0) account_.book.set_steps_per_report(every_);
    total_steps_ = in_.run.steps_per_epoch() * rc_.epochs;
  }

  // This replica's engine, sized for the largest share it may get, in its slot; a simulated
  // straggler wraps it.
  void make_engine_here() {
    const DeviceSpec& device = in_.run.devices[std::size_t(local_)];
    const int max_batch = static_cast<int>(shares_.max_share());
    auto engine = in_.engine_factory ? in_.engine_factory(device, max_batch)
                                     : make_engine(device, rc_.backend, max_batch, rc_.precision, in_.run.model, rc_.engine);
    if (rank_ == rc_.scenario.straggler.replica) engine = make_straggler(std::move(engine), rc_.scenario.straggler.factor);
    shared_.per_replica.engines[std::size_t(local_)] = std::move(engine);
    engine_ = shared_.per_replica.engines[std::size_t(local_)].get();
    who_ = fmt::format("replica {} ({})", rank_, engine_->device_name());
  }

  // Every step of one epoch; false when it stopped before the last. `stop` is set when any
  // rank asked to stop (the same on every rank).
  bool train_epoch(const std::vector<int32_t>& order, int epoch, bool& stop) {
    const int64_t steps = in_.run.steps_per_epoch(), global = rc_.global_batch;
    const int64_t detail_every = std::max<int64_t>(every_, kDetailEvery);
    PhaseTimes since;   // this replica's phases since the last report
    int64_t steps_since_report = 0;
    const int64_t k = std::max(1, rc_.scenario.accumulate);
    for (int64_t s = 0; s < steps;) {
      const int64_t b0 = s * global, b = std::min(global, rc_.train_size - b0);
      // Gradient accumulation: steps [w0, w1) of the epoch are one window, the last one partial.
      const int64_t w0 = s / k * k, w1 = std::min(w0 + k, steps);
      const Window window{std::min(rc_.train_size, w1 * global) - w0 * global, s + 1 == w1};
      if (const auto change = shares_.follow_replay(step_); change && rank_ == 0)
        account_.record.shares_changed(change->step, change->shares);
      const int64_t lo = shares_.begin(b, rank_), hi = shares_.begin(b, rank_ + 1);
      const bool report = (s + 1) % every_ == 0 || s + 1 == steps;
      // The same steps on every rank: the choice depends on the step number only.
      const bool detailed = report && (rc_.step_delay_s > 0 || (s + 1) % detail_every == 0);
      // A detailed step shows its own loss: the report's earlier steps are taken apart first.
      const BatchStats earlier = detailed ? engine_->take_train_stats() : BatchStats{};
      const auto step_start = Clock::now();
      const double input_wait = input_ ? input_->wait_ready(s, Deadline::after(in_.run.timeout_s)) : 0.0;
      since[phase::InputWait] += input_wait;
      double grad_norm = std::nan("");
      PhaseTimes step_times = train_step(order, b0, lo, hi, b, window, detailed ? &grad_norm : nullptr, since);
      step_times[phase::InputWait] = input_wait;
      trace_.add(step_, std::chrono::duration<double>(step_start - run_start_).count(), step_times, epoch, s + 1);
      ++s;
      ++step_;
      ++steps_since_report;
      if (!report) continue;
      StepReport mine;
      mine.stats = engine_->take_train_stats();
      mine.times = since;
      mine.stop = in_.stop_requested.load() ? 1 : 0;
      mine.share_begin = lo;
      mine.share_count = hi - lo;
      if (detailed) {
        mine.step_stats = mine.stats;
        mine.stats += earlier;
        mine.detailed = 1;
        mine.grad_norm = grad_norm;
        engine_->get_params(params_);
        mine.digest = params_digest(params_);
        mine.step_times = step_times;
      }
      const auto all = comm_.all_gather(mine);
      if (shares_.balanced()) check_shares_tile(all, b);
      // The exchange itself is step time too: it opens the next report's account.
      const CollectiveTimes ct = comm_.take_times();
      since = PhaseTimes{};
      since[phase::Wait] = ct.wait_s;
      since[phase::AllReduce] = ct.transfer_s;
      if (rank_ == 0)
        account_.book.add(all, s, std::min(rc_.train_size, s * global),
                          std::span<const int32_t>(order.data() + b0, static_cast<std::size_t>(b)));
      rebalance(all, steps_since_report);
      steps_since_report = 0;
      stop = std::any_of(all.begin(), all.end(), [](const StepReport& r) { return r.stop != 0; });
      if (stop) return s == steps;
      pace(step_start, rc_.step_delay_s, in_.stop_requested);
    }
    return true;
  }

  static void check_shares_tile(const std::vector<StepReport>& all, int64_t b) {
    std::vector<int64_t> begins, counts;
    for (const StepReport& r : all) begins.push_back(r.share_begin), counts.push_back(r.share_count);
    StepShares::check_tile(begins, counts, b);
  }

  // Every rank gives its StepShares the same gathered reports, so every rank changes its shares
  // at the same step to the same values; the change applies from the next step. Rank 0 records
  // it (and logs the first few, which show the shares settle).
  void rebalance(const std::vector<StepReport>& all, int64_t steps) {
    if (!shares_.balanced() || shares_.replaying()) return;
    std::vector<ShareSample> samples(all.size());
    for (std::size_t r = 0; r < all.size(); ++r)
      samples[r] = {all[r].times[phase::Forward] + all[r].times[phase::Backward], all[r].times[phase::Optimizer],
                    all[r].stats.samples, steps};
    const auto change = shares_.observe(samples, step_, total_steps_);
    if (!change || rank_ != 0) return;
    const std::size_t count = account_.record.shares_changed(change->step, change->shares);
    if (count <= kLoggedShareChanges)
      log_line(account_.book.observer(), LogLevel::Info,
               fmt::format("balanced shares from step {}: {}{}", change->step + 1, fmt::join(change->shares, " / "),
                           count == kLoggedShareChanges ? " (later changes: in the run record)" : ""));
  }

  // The accumulation window a step belongs to: its samples over all replicas and micro-batches
  // (the gradient is their mean), and whether the step ends it (all-reduce and optimizer step).
  struct Window {
    int64_t samples = 0;
    bool last = true;
  };

  // One step on this replica's share [lo, hi) of the global batch [b0, b0 + b): returns the
  // step's own phases, which are added to `since`.
  PhaseTimes train_step(const std::vector<int32_t>& order, int64_t b0, int64_t lo, int64_t hi, int64_t b,
                        const Window& window, double* grad_norm, PhaseTimes& since) {
    TrainStep step;
    step.indices = std::span<const int32_t>(order.data() + b0 + lo, static_cast<std::size_t>(hi - lo));
    step.order_offset = b0 + lo;
    step.global_batch = b;
    step.grad_scale = 1.0f / static_cast<float>(window.samples);
    step.sync = window.last;
    step.adam_step = window.last ? ++adam_step_ : adam_step_ + 1;
    if (window.last) adam_.lr = static_cast<float>(warmup_.at(step.adam_step));
    step.time_phases = rc_.time_phases;
    step.local_grad_norm = window.last ? grad_norm : nullptr;
    step.buckets = buckets_;
    const PhaseTimes before = since;
    engine_->train_step(step, comm_, adam_, since);
    return since - before;
  }

  // Validation on each replica's contiguous share of the validation set, and the in-sync
  // check; true when the run stops here.
  bool end_epoch(int epoch, double time_s) {
    const std::vector<int32_t>& val_order = val_order_of();
    EpochReport mine;
    const int64_t vlo = replica_share_begin(rc_.val_size, n_, rank_), vhi = replica_share_begin(rc_.val_size, n_, rank_ + 1);
    mine.val = engine_->evaluate(std::span<const int32_t>(val_order.data() + vlo, std::size_t(vhi - vlo)));
    engine_->get_params(params_);
    mine.digest = params_digest(params_);
    mine.stop = in_.stop_requested.load() ? 1 : 0;
    const auto all = comm_.all_gather(mine);
    comm_.take_times();   // validation is not training time
    if (rank_ == 0) account_.book.end_epoch(time_s, all);
    const std::string sync_error = out_of_sync_message(all, epoch);
    if (!sync_error.empty()) account_.record.out_of_sync(sync_error);
    return !sync_error.empty() || std::any_of(all.begin(), all.end(), [](const EpochReport& r) { return r.stop != 0; });
  }

  // The images of this replica's share of epoch step s that its loaders prepare: the lock-step
  // share (with balanced shares the loaders prepare the even share; the engine takes its own).
  int64_t input_images(int64_t s) const {
    const int64_t global = rc_.global_batch, b = std::min(global, rc_.train_size - s * global);
    return replica_share_begin(b, n_, rank_ + 1) - replica_share_begin(b, n_, rank_);
  }

  const std::vector<int32_t>& val_order_of() {
    if (val_order_.empty()) {
      val_order_.resize(static_cast<std::size_t>(rc_.val_size));
      std::iota(val_order_.begin(), val_order_.end(), 0);
    }
    return val_order_;
  }

  const ReplicaShared::Inputs& in_;
  ReplicaShared::Account& account_;
  ReplicaShared& shared_;
  const RunConfig& rc_;
  const int local_;
  Communicator& comm_;
  const int rank_, n_;
  std::string who_;
  ReplicaEngine* engine_ = nullptr;
  std::vector<float> params_;
  std::vector<int32_t> val_order_;
  AdamConfig adam_;
  LrWarmup warmup_;                  // the rate of each optimizer step (the run's rate without warm-up)
  std::vector<GradientBucket> buckets_;   // --bucket-mb (empty: one all-reduce after the backward pass)
  Clock::time_point run_start_;
  int every_ = 1;
  int64_t adam_step_ = 0;
  int64_t total_steps_ = 0;
  int64_t step_ = 0;                 // steps done over the run (a share change's step counts these)
  StepShares shares_;                // the same on every rank
  TraceSampler trace_;
  std::unique_ptr<InputPipeline> input_;   // with an input cost only (--input-latency, --input-cpu)
};

}  // namespace

void ReplicaShared::fail(const std::string& what) {
  account.record.failed(what);
  for (auto& c : per_replica.comms) c->abort(what);
}

void run_replica(ReplicaShared& shared, int local) {
  ReplicaLoop loop(shared, local);
  try {
    loop.run();
  } catch (const BarrierAborted&) {
    // Another replica failed first; its message is the one to report.
  } catch (const PeerFailure& e) {
    shared.fail(e.what());   // already names the process at fault
  } catch (const std::exception& e) {
    shared.fail(fmt::format("{}: {}", loop.who(), e.what()));
  } catch (...) {
    // Anything escaping a std::thread's function is std::terminate.
    shared.fail(fmt::format("{}: unknown exception", loop.who()));
  }
  // On this thread, after any failure is known: a destructor stuck in the driver (a device
  // that never finishes) is then a stuck replica the bounded join reports (replica_threads.h).
  shared.per_replica.engines[std::size_t(local)].reset();
}

}  // namespace mb
