// Threads inside a process, a ProcessLink between processes (see hierarchical_communicator.h).
//
// Gradient all-reduce, bit-identical on every rank because every element is summed exactly
// once, in a fixed order, and the result's bits are then copied:
//   threads only   each rank publishes its buffer, reduces ITS chunk across all ranks in rank
//                  order (reduce-scatter, every core busy at once), then copies the other
//                  ranks' reduced chunks (all-gather);
//   with a link    the local ranks reduce their chunks of the local buffers, in local rank
//                  order, into one per-process partial sum; the leader sums the processes'
//                  partials over the link (reduce-scatter + all-gather there too); every
//                  local rank copies the result.
// For one replica per process the two give the same bits (the MPI link, too, sums each
// element in process order), so `mpirun -np N ... cpu:1` trains exactly what in-process
// cpu:N trains.
//
// Lock-step pays every barrier on every step, and any replica's hiccup at one stalls all: the
// small all-gathers (step reports, digests) pass one barrier between threads, not three. Their
// blocks go through two shared staging buffers used alternately (StagingPair): a rank that
// returned may start the next collective at once, because nobody can still be reading the
// buffer it writes — that one was last used two collectives ago, and everyone has since passed
// a barrier.
#include "comm/hierarchical_communicator.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "util/cpu_topology.h"
#include "util/error.h"
#include "util/spin_barrier.h"

namespace mb {
namespace {

using Clock = std::chrono::steady_clock;
double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Chunk [begin, end) of `count` elements owned by part p of n; boundaries rounded to 16
// floats (one cache line) so parts never write the same line.
std::pair<std::size_t, std::size_t> chunk_of(std::size_t count, int n, int p) {
  const std::size_t chunk = (count + n - 1) / n;
  const std::size_t aligned = (chunk + 15) / 16 * 16;
  const std::size_t begin = std::min(count, aligned * std::size_t(p));
  return {begin, std::min(count, begin + aligned)};
}

// Sum of `n` buffers over [begin, end) in buffer order, into `out` (may be one of them: a
// stack block keeps the inputs readable while the result is built).
void sum_in_order(const std::vector<const float*>& in, int n, std::size_t begin, std::size_t end, float* out) {
  constexpr std::size_t kBlock = 512;
  float acc[kBlock];
  for (std::size_t b = begin; b < end; b += kBlock) {
    const std::size_t len = std::min(kBlock, end - b);
    std::memcpy(acc, in[0] + b, len * sizeof(float));
    for (int r = 1; r < n; ++r) {
      const float* src = in[std::size_t(r)] + b;
      for (std::size_t i = 0; i < len; ++i) acc[i] += src[i];
    }
    std::memcpy(out + b, acc, len * sizeof(float));
  }
}

// The threads-only all-gathers' blocks, in two buffers used alternately (every rank counts its
// staged collectives, and every rank calls the same ones, so they agree on which one).
// Grown only in a barrier's completion, when nobody reads or writes either; 64-byte aligned.
class StagingPair {
 public:
  // Whether buffer `which` holds `bytes` (the same answer on every rank between two barriers).
  bool holds(int which, std::size_t bytes) const { return capacity_[which] >= bytes; }
  void grow(std::size_t bytes) {
    for (int k = 0; k < 2; ++k)
      if (capacity_[k] < bytes) {
        storage_[k].assign(bytes + kAlign, 0);
        capacity_[k] = bytes;
      }
  }
  unsigned char* data(int which) {
    const auto at = reinterpret_cast<std::uintptr_t>(storage_[which].data());
    return storage_[which].data() + (kAlign - at % kAlign) % kAlign;
  }

 private:
  static constexpr std::size_t kAlign = 64;
  std::vector<unsigned char> storage_[2];
  std::size_t capacity_[2] = {0, 0};
};

// How long a local rank spins at a barrier before it blocks: ranks that each have a CPU of
// this process's own spin through a step's usual imbalance (a CPU replica's step takes
// milliseconds; waking a blocked thread costs tens of microseconds, measured by
// `allreduce_bench --lockstep`); more ranks than CPUs spin briefly (see SpinBarrier).
double spin_budget_s(int local_ranks) {
  constexpr double kOwnCpuSpinS = 2e-3;
  static const std::size_t cpus = cpu_placement().order.size();
  return std::size_t(local_ranks) <= cpus ? kOwnCpuSpinS : SpinBarrier::kShortSpinS;
}

// What the local ranks of one process share. Every field but the abort reason is touched
// only between barriers (or inside a barrier's completion), which orders the accesses.
struct LocalGroup {
  LocalGroup(int local_ranks, std::shared_ptr<ProcessLink> link, double timeout_s)
      : ranks(local_ranks), link(std::move(link)), timeout_s(timeout_s),
        barrier(local_ranks, timeout_s, spin_budget_s(local_ranks)),
        in(local_ranks), out(local_ranks), entered(std::size_t(local_ranks)), progress(std::size_t(local_ranks)) {}

  bool linked() const { return link && link->info().processes > 1; }
  int processes() const { return link ? link->info().processes : 1; }
  int process() const { return link ? link->info().process : 0; }

  const int ranks;
  std::shared_ptr<ProcessLink> link;
  const double timeout_s;
  SpinBarrier barrier;
  std::vector<const void*> in;     // per local rank: its input for the current collective
  std::vector<void*> out;          // per local rank: its output
  std::vector<float> partial;      // the process's partial gradient sum (linked only)
  std::vector<unsigned char> staging;   // linked all-gather: the process's block
  StagingPair staged;                   // threads only: all-gathered blocks (see StagingPair)
  double link_wait_s = 0;          // the leader's wait for the other processes, this collective
  // Per local rank, written by that rank, read by whoever reports a stall: collectives it
  // entered, and the last training step it started (note_progress; 0: none yet).
  std::vector<std::atomic<uint64_t>> entered;
  std::vector<std::atomic<int64_t>> progress;

  std::mutex abort_mutex;
  std::string abort_reason;
};

class HierarchicalCommunicator final : public Communicator {
 public:
  HierarchicalCommunicator(std::shared_ptr<LocalGroup> group, int local)
      : g_(std::move(group)), local_(local), rank_(g_->process() * g_->ranks + local),
        size_(g_->processes() * g_->ranks) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return g_->linked() ? g_->link->name() + "+threads" : "threads"; }

  void all_reduce_sum(float* data, std::size_t count) override { all_reduce(data, count, WireDtype::Fp32); }

  // Between processes, one replica's values travel as `wire` (the link packs them: lossless);
  // several replicas' partial sums are not representable in 16 bits, so they travel in FP32 and
  // the result is rounded, as the threads' shared memory does.
  void all_reduce_sum_as(float* data, std::size_t count, WireDtype wire) override {
    all_reduce(data, count, wire);
    if (wire != WireDtype::Fp32) round_to_wire(std::span<float>(data, count), wire);
  }

  void broadcast_bytes(void* data, std::size_t bytes, int root) override {
    MB_CHECK(root >= 0 && root < size_, Error, "broadcast: root {} is not a rank of this run (0..{})", root,
             size_ - 1);
    if (size_ == 1 || bytes == 0) return;
    const auto t0 = Clock::now();
    const int root_process = root / g_->ranks, root_local = root % g_->ranks;
    g_->in[local_] = data;
    g_->out[local_] = data;
    // The source every local rank copies from: the root's buffer in the root's process, the
    // leader's (local 0's) buffer after it received the link broadcast elsewhere.
    const bool via_link = g_->linked();
    arrive(kBroadcast, [] {});
    const auto t1 = Clock::now();
    arrive(kBroadcast, [&] {
      if (!via_link) return;
      leader_link_call([&] {
        void* lead = g_->out[0];
        if (g_->process() == root_process && root_local != 0) std::memcpy(lead, g_->in[root_local], bytes);
        g_->link->broadcast(lead, bytes, root_process);
      });
    });
    const void* src = via_link ? g_->out[0] : g_->in[root_local];
    if (src != data) std::memcpy(data, src, bytes);
    arrive(kBroadcast, [] {});   // the source stays valid until everyone copied it
    account(t0, t1);
  }

  void all_gather_bytes(const void* mine, std::size_t bytes, void* all) override {
    if (bytes == 0) return;
    if (size_ == 1) {
      std::memcpy(all, mine, bytes);
      return;
    }
    const auto t0 = Clock::now();
    if (!g_->linked()) {
      // Each rank writes its block into the staging buffer; one barrier, and all copy it.
      const int which = next_staging();
      const std::size_t block = bytes * std::size_t(g_->ranks);
      if (!g_->staged.holds(which, block)) arrive(kAllGather, [&] { g_->staged.grow(block); });
      std::memcpy(g_->staged.data(which) + bytes * std::size_t(local_), mine, bytes);
      const auto t1 = Clock::now();
      arrive(kAllGather, [] {});
      const auto t2 = Clock::now();
      std::memcpy(all, g_->staged.data(which), block);
      times_.wait_s += seconds(t1, t2);
      times_.transfer_s += seconds(t0, t1) + seconds(t2, Clock::now());
      return;
    }
    g_->in[local_] = mine;
    g_->out[local_] = all;
    arrive(kAllGather, [] {});
    const auto t1 = Clock::now();
    // One thread assembles the process's block (rank order) into local 0's output, then
    // exchanges the blocks over the link (process order = rank order).
    arrive(kAllGather, [&] {
      const std::size_t block = bytes * std::size_t(g_->ranks);
      auto* lead = static_cast<unsigned char*>(g_->out[0]);
      unsigned char* local_block = lead;
      if (g_->linked()) {
        g_->staging.resize(block);
        local_block = g_->staging.data();
      }
      for (int r = 0; r < g_->ranks; ++r) std::memcpy(local_block + bytes * r, g_->in[r], bytes);
      if (g_->linked()) leader_link_call([&] { g_->link->all_gather(local_block, block, lead); });
    });
    if (local_ != 0) std::memcpy(all, g_->out[0], bytes * std::size_t(size_));
    arrive(kAllGather, [] {});   // local 0's buffer stays valid until everyone copied it
    account(t0, t1);
  }

  void barrier() override {
    if (size_ == 1) return;
    const auto t0 = Clock::now();
    arrive(kBarrier, [&] {
      if (g_->linked()) leader_link_call([&] { g_->link->barrier(); });
    });
    times_.wait_s += seconds(t0, Clock::now());
  }

  void abort(const std::string& reason) override {
    {
      std::lock_guard lock(g_->abort_mutex);
      if (g_->abort_reason.empty()) g_->abort_reason = reason.empty() ? "aborted" : reason;
    }
    g_->barrier.abort();
    if (g_->link) g_->link->request_abort(reason);
  }

  void check() override {
    {
      std::lock_guard lock(g_->abort_mutex);
      if (!g_->abort_reason.empty()) throw BarrierAborted();
    }
    if (g_->linked()) g_->link->check();   // a failure notice from another process
  }

  CollectiveTimes take_times() override { return std::exchange(times_, CollectiveTimes{}); }

  double timeout_s() const override { return g_->timeout_s; }
  void note_progress(int64_t step) override { g_->progress[std::size_t(local_)].store(step, std::memory_order_relaxed); }

  std::string describe_stall() override {
    std::string out = progress_text();
    if (g_->linked()) {
      const std::string peers = g_->link->diagnose_peers();
      if (!peers.empty()) out += (out.empty() ? "" : "; ") + peers;
    }
    return out;
  }

 private:
  // The gradient all-reduce, its values travelling as `wire` between processes where they can.
  void all_reduce(float* data, std::size_t count, WireDtype wire) {
    if (size_ == 1 || count == 0) return;
    const auto t0 = Clock::now();
    g_->in[local_] = data;
    if (!g_->linked()) return threads_all_reduce(data, count, t0);

    // With one replica per process the buffer is the partial sum already.
    const bool solo = g_->ranks == 1;
    arrive(kAllReduce, [&] {
      if (!solo && g_->partial.size() < count) g_->partial.resize(count);
    });
    const auto t1 = Clock::now();
    float* partial = solo ? data : g_->partial.data();
    if (!solo) {
      const auto [begin, end] = chunk_of(count, g_->ranks, local_);
      sum_in_order(inputs(), g_->ranks, begin, end, partial);
    }
    // The leader (the last local rank to arrive runs the completion, whichever it is: the
    // link is called by one thread at a time, which is all MPI_THREAD_SERIALIZED asks).
    arrive(kAllReduce, [&] { leader_all_reduce(partial, count, solo ? wire : WireDtype::Fp32); });
    if (!solo) std::memcpy(data, partial, count * sizeof(float));
    if (!solo) arrive(kAllReduce, [] {});   // the partial is not reused before everyone copied it
    account(t0, t1);
  }

  static constexpr const char* kAllReduce = "the gradient all-reduce";
  static constexpr const char* kBroadcast = "a broadcast";
  static constexpr const char* kAllGather = "an all-gather (step statistics or digests)";
  static constexpr const char* kBarrier = "a barrier";

  // The local ranks' last training steps, when they differ ("replica 1 last started step 3,
  // replica 0 step 64"): the rank that stopped advancing stands out.
  std::string progress_text() const {
    std::vector<int64_t> steps(std::size_t(g_->ranks));
    for (int r = 0; r < g_->ranks; ++r) steps[std::size_t(r)] = g_->progress[std::size_t(r)].load(std::memory_order_relaxed);
    if (std::all_of(steps.begin(), steps.end(), [&](int64_t s) { return s == steps.front(); })) return {};
    std::string out = "last training step started:";
    for (int r = 0; r < g_->ranks; ++r)
      out += fmt::format("{} replica {} step {}", r == 0 ? "" : ",", global_rank(r), steps[std::size_t(r)]);
    return out;
  }

  int global_rank(int local) const { return g_->process() * g_->ranks + local; }

  // A wait that outlived --timeout: the local ranks that entered fewer collectives than this
  // one are the ones it waited for.
  [[noreturn]] void throw_late(const char* what, uint64_t mine, double seconds) const {
    std::string late;
    for (int r = 0; r < g_->ranks; ++r)
      if (g_->entered[std::size_t(r)].load(std::memory_order_relaxed) < mine)
        late += fmt::format("{}replica {}", late.empty() ? "" : ", ", global_rank(r));
    if (late.empty()) late = "another replica";
    const std::string progress = progress_text();
    throw StallError(fmt::format("replica {} waited {:g} s (--timeout) in {} for {}, which did not arrive: stuck, "
                                 "not failed{}",
                                 rank_, seconds, what, late, progress.empty() ? "" : " (" + progress + ")"));
  }

  template <typename F>
  void arrive(const char* what, F&& on_complete) {
    const uint64_t mine = g_->entered[std::size_t(local_)].fetch_add(1, std::memory_order_relaxed) + 1;
    try {
      g_->barrier.arrive_and_wait(std::function<void()>(std::forward<F>(on_complete)));
    } catch (const BarrierTimeout& t) {
      throw_late(what, mine, t.seconds());
    }
  }

  // A link collective, preceded by a link barrier whose duration is "waiting for the slowest
  // process" in every local rank's breakdown (published in link_wait_s).
  template <typename F>
  void leader_link_call(F&& call) {
    const auto t0 = Clock::now();
    g_->link->barrier();
    g_->link_wait_s = seconds(t0, Clock::now());
    call();
  }

  // The gradient all-reduce over the link: a link that measures its own wait for the others
  // needs no barrier before it (the MPI link: each process's arrival note travels with its
  // data, so waiting costs no round trip).
  void leader_all_reduce(float* partial, std::size_t count, WireDtype wire) {
    ProcessLink& link = *g_->link;
    auto exchange = [&] {
      if (wire == WireDtype::Fp32) link.all_reduce_sum(partial, count);
      else link.all_reduce_sum_as(partial, count, wire);
    };
    if (!link.measures_all_reduce_wait()) return leader_link_call(exchange);
    exchange();
    g_->link_wait_s = link.all_reduce_wait_s();
  }

  // Wait: for the local ranks (t0..t1) and the other processes (link_wait_s); the rest of
  // the call is the exchange itself.
  void account(Clock::time_point t0, Clock::time_point t1) {
    const double total = seconds(t0, Clock::now());
    const double wait = std::min(total, seconds(t0, t1) + (g_->linked() ? g_->link_wait_s : 0.0));
    times_.wait_s += wait;
    times_.transfer_s += total - wait;
  }

  // Threads only: each rank reduces its chunk in place and copies the others' chunks from
  // their buffers; a third barrier keeps every buffer until the others copied from it. (Through
  // the staging buffers it would need one barrier less but copy the whole result once more:
  // measured, that cost more than the barrier from 64 KB on, docs/benchmarks.md.)
  void threads_all_reduce(float* data, std::size_t count, Clock::time_point t0) {
    arrive(kAllReduce, [] {});
    const auto t1 = Clock::now();
    const auto [begin, end] = chunk_of(count, g_->ranks, local_);
    sum_in_order(inputs(), g_->ranks, begin, end, data);
    arrive(kAllReduce, [] {});   // every chunk reduced
    for (int r = 0; r < g_->ranks; ++r) {
      if (r == local_) continue;
      const auto [b, e] = chunk_of(count, g_->ranks, r);
      if (e > b) std::memcpy(data + b, static_cast<const float*>(g_->in[r]) + b, (e - b) * sizeof(float));
    }
    arrive(kAllReduce, [] {});   // nobody reads our buffer any more: safe to return
    times_.wait_s += seconds(t0, t1);
    times_.transfer_s += seconds(t1, Clock::now());
  }

  // The local ranks' published buffers (into a member: no allocation on the step's path).
  const std::vector<const float*>& inputs() {
    inputs_.resize(std::size_t(g_->ranks));
    for (int r = 0; r < g_->ranks; ++r) inputs_[std::size_t(r)] = static_cast<const float*>(g_->in[std::size_t(r)]);
    return inputs_;
  }

  // Which staging buffer this rank's next threads-only all-gather uses.
  int next_staging() { return static_cast<int>(staged_calls_++ & 1u); }

  std::shared_ptr<LocalGroup> g_;
  const int local_, rank_, size_;
  CollectiveTimes times_;
  uint64_t staged_calls_ = 0;
  std::vector<const float*> inputs_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_process_communicators(int local_ranks,
                                                                      std::shared_ptr<ProcessLink> link,
                                                                      double timeout_s) {
  MB_CHECK(local_ranks >= 1, ConfigError, "a communicator needs at least one rank, got {}", local_ranks);
  MB_CHECK(timeout_s > 0, ConfigError, "--timeout must be positive (got {})", timeout_s);
  if (link && link->info().processes > 1) {
    // Ranks are numbered process * local_ranks + local: every process must run as many.
    const int processes = link->info().processes;
    std::vector<int32_t> counts(static_cast<std::size_t>(processes));
    const int32_t mine = local_ranks;
    link->all_gather(&mine, sizeof mine, counts.data());
    for (int p = 0; p < processes; ++p)
      MB_CHECK(counts[p] == mine, ConfigError,
               "process {} runs {} replica(s) but process {} on host {} runs {}: every process must get the same "
               "--devices",
               p, counts[p], link->info().process, link->info().host, mine);
  }
  auto group = std::make_shared<LocalGroup>(local_ranks, std::move(link), timeout_s);
  std::vector<std::unique_ptr<Communicator>> out;
  for (int l = 0; l < local_ranks; ++l) out.push_back(std::make_unique<HierarchicalCommunicator>(group, l));
  return out;
}

std::vector<std::unique_ptr<Communicator>> make_thread_communicators(int ranks, double timeout_s) {
  return make_process_communicators(ranks, nullptr, timeout_s);
}

}  // namespace mb
