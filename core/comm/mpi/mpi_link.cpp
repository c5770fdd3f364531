// MPI collectives with a watchdog (see mpi_link.h).
#include "comm/mpi/mpi_link.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "comm/mpi/mpi_check.h"
#include "util/error.h"
#include "util/spin_barrier.h"
#include "util/termination.h"

namespace mb::mpi {
namespace {

using Clock = std::chrono::steady_clock;

// Tags on the control communicator.
constexpr int kTagAbort = 1;   // payload: the failing process's reason
constexpr int kTagPing = 2;
constexpr int kTagPong = 3;
// Tags of the all-reduce's messages on the collectives' communicator (messages of one tag
// between two processes arrive in the order sent, so consecutive all-reduces never mix).
constexpr int kTagArrive = 11;   // the arrival note
constexpr int kTagShare = 12;    // a process's copy of another's share
constexpr int kTagSum = 13;      // a share's sum, from its owner

// Waiting: spin this many polls, then yield between polls; sleep between polls only after
// this long (see wait()).
constexpr long kSpinPolls = 2000;
constexpr auto kSleepAfter = std::chrono::milliseconds(50);
constexpr auto kSleep = std::chrono::microseconds(50);

// How long a rank keeps waiting after the launcher's SIGTERM: healthy peers got the same
// signal and finish the collective in well under this; Open MPI's mpirun kills the rest
// one second after the SIGTERM, which is the time left to write a record.
constexpr auto kAfterSignal = std::chrono::milliseconds(250);
constexpr auto kPingWait = std::chrono::seconds(2);
// After the launcher's SIGTERM the ping must fit in what is left of that second: the peers
// that live answer within milliseconds (they are waiting too, and answer while they do).
constexpr auto kPingAfterSignal = std::chrono::milliseconds(300);

struct PeerWire {   // all-gathered at start
  char host[64];
  int32_t pid;
};

// The scheduler state of a local process from /proc ('R', 'S', 'T' stopped, 'Z' zombie ...),
// or 'X' when there is no such process.
char process_state(int pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(in, line)) return 'X';
  const auto close = line.rfind(')');   // the command name may hold spaces and parentheses
  return close == std::string::npos || close + 2 >= line.size() ? '?' : line[close + 2];
}

int checked_int(std::size_t n, const char* what) {
  MB_CHECK(n <= std::size_t(INT_MAX), Error, "MPI: {} of {} elements exceeds MPI's int counts", what, n);
  return static_cast<int>(n);
}

}  // namespace

[[noreturn]] void throw_mpi_error(int status, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(status, text, &len);
  throw DeviceError(fmt::format("MPI call {} failed: {} ({}:{})", call, std::string(text, std::size_t(len)), file, line));
}

MpiLink::MpiLink(double timeout_s) : timeout_s_(timeout_s) {
  MB_CHECK(timeout_s > 0, ConfigError, "--timeout must be positive (got {})", timeout_s);
  MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &coll_));
  MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &ctrl_));
  MPI_CHECK(MPI_Comm_set_errhandler(coll_, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_set_errhandler(ctrl_, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(coll_, &info_.process));
  MPI_CHECK(MPI_Comm_size(coll_, &info_.processes));
  MPI_Comm node = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(coll_, MPI_COMM_TYPE_SHARED, info_.process, MPI_INFO_NULL, &node));
  MPI_CHECK(MPI_Comm_rank(node, &info_.local_process));
  MPI_CHECK(MPI_Comm_size(node, &info_.local_processes));
  MPI_Comm_free(&node);

  char host[256] = {};
  gethostname(host, sizeof host - 1);
  info_.host = host;
  PeerWire mine{};
  std::memcpy(mine.host, host, std::min(sizeof mine.host - 1, std::strlen(host)));
  mine.pid = static_cast<int32_t>(getpid());
  std::vector<PeerWire> all(static_cast<std::size_t>(info_.processes));
  all_gather(&mine, sizeof mine, all.data());
  for (const auto& p : all) peers_.push_back({std::string(p.host, strnlen(p.host, sizeof p.host)), p.pid});
  alive_.assign(peers_.size(), 0);
}

void MpiLink::close() {
  std::lock_guard lock(mutex_);
  if (coll_ != MPI_COMM_NULL) MPI_Comm_free(&coll_);
  if (ctrl_ != MPI_COMM_NULL) MPI_Comm_free(&ctrl_);
}

std::string MpiLink::describe(int process) const {
  if (process < 0 || std::size_t(process) >= peers_.size()) return fmt::format("MPI rank {}", process);  // at start-up
  const Peer& p = peers_[std::size_t(process)];
  return fmt::format("MPI rank {} (host {}, pid {})", process, p.host, p.pid);
}

void MpiLink::check_usable() const {
  if (local_abort_) throw BarrierAborted();
  MB_CHECK(!broken_, DeviceError, "MPI: the link to the other processes failed earlier in this run");
}

// Why point to point: Open MPI 4.1's non-blocking MPI_Ireduce_scatter + MPI_Iallgatherv
// (libnbc) took 1.4-2.2x its own MPI_Allreduce for the model's 0.49 MB even when waited for
// with MPI_Wait, and the barrier that had to precede them (to tell waiting from exchange)
// cost a round trip more (bench/allreduce_bench --diagnose; docs/benchmarks.md). Direct
// messages move what a ring moves (2 (n-1)/n of the buffer per process) with every receive
// posted at entry, and each element is summed once, by its owner, in process order, then
// copied: the same bits everywhere, and for one replica per process the very bits of
// in-process threads. (Two processes swapping whole buffers and both adding would give the
// same bits in one round instead of two, but took 1.4x the halves over shared memory:
// allreduce_bench --diagnose.)
void MpiLink::all_reduce(float* data, std::size_t count, WireDtype wire) {
  check_usable();
  all_reduce_wait_s_ = 0;
  const int n = info_.processes;
  if (n == 1 || count == 0) return;
  checked_int(count, "all-reduce");
  // Process p owns elements [begin[p], begin[p + 1]).
  std::vector<std::size_t> begin(std::size_t(n) + 1);
  const std::size_t chunk = (count + n - 1) / n;
  for (int p = 0; p <= n; ++p) begin[std::size_t(p)] = std::min(count, chunk * std::size_t(p));
  try {
    reduce_scatter(data, begin, wire);
    all_gather_sums(data, begin, wire);
  } catch (...) {
    // The run ends (broken link): no receive left pending may write into `data` later.
    std::lock_guard lock(mutex_);
    for (MPI_Request& r : requests_)
      if (r != MPI_REQUEST_NULL) {
        MPI_Cancel(&r);
        MPI_Request_free(&r);
      }
    throw;
  }
}

void MpiLink::reduce_scatter(float* data, const std::vector<std::size_t>& begin, WireDtype wire) {
  const int n = info_.processes, me = info_.process;
  const std::size_t mine = begin[std::size_t(me) + 1] - begin[std::size_t(me)];
  const bool packed = wire != WireDtype::Fp32;
  scratch_.resize(std::max<std::size_t>(1, mine * std::size_t(n)));   // slot p: process p's copy
  if (packed) {
    // Slot p of packed_in_: process p's copy of this share; packed_out_: everything sent, in
    // place (the values are representable: packing loses nothing).
    packed_in_.resize(std::max<std::size_t>(1, mine * std::size_t(n)));
    packed_out_.resize(std::max<std::size_t>(1, begin[std::size_t(n)]));
    pack_wire(std::span<const float>(data, begin[std::size_t(n)]), wire, packed_out_.data());
  }
  arrival_in_.resize(std::size_t(n));
  const std::size_t peers = std::size_t(n - 1);
  requests_.assign(4 * peers, MPI_REQUEST_NULL);   // notes in/out, then shares in/out
  const auto start = Clock::now();
  {
    std::lock_guard lock(mutex_);
    for (int j = 1; j < n; ++j) {   // ring order: the processes do not all send to one at once
      const int to = (me + j) % n, from = (me - j + n) % n;
      MPI_Request* r = requests_.data() + 2 * std::size_t(j - 1);
      MPI_CHECK(MPI_Irecv(&arrival_in_[std::size_t(from)], 1, MPI_INT, from, kTagArrive, coll_, &r[0]));
      MPI_CHECK(MPI_Isend(&arrival_note_, 1, MPI_INT, to, kTagArrive, coll_, &r[1]));
      r += 2 * peers;
      const std::size_t b = begin[std::size_t(to)], e = begin[std::size_t(to) + 1];
      if (packed) {
        MPI_CHECK(MPI_Irecv(packed_in_.data() + mine * std::size_t(from), int(mine), MPI_UINT16_T, from, kTagShare,
                            coll_, &r[0]));
        MPI_CHECK(MPI_Isend(packed_out_.data() + b, int(e - b), MPI_UINT16_T, to, kTagShare, coll_, &r[1]));
      } else {
        MPI_CHECK(MPI_Irecv(scratch_.data() + mine * std::size_t(from), int(mine), MPI_FLOAT, from, kTagShare, coll_,
                            &r[0]));
        MPI_CHECK(MPI_Isend(data + b, int(e - b), MPI_FLOAT, to, kTagShare, coll_, &r[1]));
      }
    }
  }
  wait(std::span<MPI_Request>(requests_.data(), 2 * peers), "waiting for the other processes (all-reduce)");
  all_reduce_wait_s_ = std::chrono::duration<double>(Clock::now() - start).count();
  wait(std::span<MPI_Request>(requests_.data() + 2 * peers, 2 * peers), "summing the gradients (reduce-scatter)");
  if (packed)
    for (int p = 0; p < n; ++p)
      if (p != me)
        unpack_wire(packed_in_.data() + mine * std::size_t(p), wire,
                    std::span<float>(scratch_.data() + mine * std::size_t(p), mine));

  // This process's share, summed over the processes in process order, in blocks (the
  // inputs stay readable while the result is built in place).
  float* out = data + begin[std::size_t(me)];
  constexpr std::size_t kBlock = 512;
  float acc[kBlock];
  auto copy_of = [&](int p, std::size_t at) { return p == me ? out + at : scratch_.data() + mine * std::size_t(p) + at; };
  for (std::size_t b = 0; b < mine; b += kBlock) {
    const std::size_t len = std::min(kBlock, mine - b);
    std::memcpy(acc, copy_of(0, b), len * sizeof(float));
    for (int p = 1; p < n; ++p) {
      const float* src = copy_of(p, b);
      for (std::size_t i = 0; i < len; ++i) acc[i] += src[i];
    }
    std::memcpy(out + b, acc, len * sizeof(float));
  }
  if (packed) round_to_wire(std::span<float>(out, mine), wire);   // what the all-gather carries
}

void MpiLink::all_gather_sums(float* data, const std::vector<std::size_t>& begin, WireDtype wire) {
  const int n = info_.processes, me = info_.process;
  const bool packed = wire != WireDtype::Fp32;
  const std::size_t b = begin[std::size_t(me)], e = begin[std::size_t(me) + 1];
  if (packed) pack_wire(std::span<const float>(data + b, e - b), wire, packed_out_.data() + b);
  requests_.assign(2 * std::size_t(n - 1), MPI_REQUEST_NULL);
  {
    std::lock_guard lock(mutex_);
    for (int j = 1; j < n; ++j) {
      const int to = (me + j) % n, from = (me - j + n) % n;
      MPI_Request* r = requests_.data() + 2 * std::size_t(j - 1);
      const std::size_t fb = begin[std::size_t(from)], fe = begin[std::size_t(from) + 1];
      if (packed) {
        // Received into packed_out_'s slots of the other processes: they were sent already
        // (the reduce-scatter's sends completed).
        MPI_CHECK(MPI_Irecv(packed_out_.data() + fb, int(fe - fb), MPI_UINT16_T, from, kTagSum, coll_, &r[0]));
        MPI_CHECK(MPI_Isend(packed_out_.data() + b, int(e - b), MPI_UINT16_T, to, kTagSum, coll_, &r[1]));
      } else {
        MPI_CHECK(MPI_Irecv(data + fb, int(fe - fb), MPI_FLOAT, from, kTagSum, coll_, &r[0]));
        MPI_CHECK(MPI_Isend(data + b, int(e - b), MPI_FLOAT, to, kTagSum, coll_, &r[1]));
      }
    }
  }
  wait(std::span<MPI_Request>(requests_), "summing the gradients (all-gather)");
  if (packed)
    for (int p = 0; p < n; ++p)
      if (p != me) {
        const std::size_t pb = begin[std::size_t(p)], pe = begin[std::size_t(p) + 1];
        unpack_wire(packed_out_.data() + pb, wire, std::span<float>(data + pb, pe - pb));
      }
}

void MpiLink::broadcast(void* data, std::size_t bytes, int root_process) {
  check_usable();
  MB_CHECK(root_process >= 0 && root_process < info_.processes, Error, "MPI broadcast: no process {}", root_process);
  if (info_.processes == 1 || bytes == 0) return;
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard lock(mutex_);
    MPI_CHECK(MPI_Ibcast(data, checked_int(bytes, "broadcast"), MPI_BYTE, root_process, coll_, &request));
  }
  wait(request, "broadcasting from rank 0");
}

void MpiLink::all_gather(const void* mine, std::size_t bytes, void* all) {
  check_usable();
  if (info_.processes == 1) {
    std::memcpy(all, mine, bytes);
    return;
  }
  MPI_Request request = MPI_REQUEST_NULL;
  const int n = checked_int(bytes, "all-gather");
  {
    std::lock_guard lock(mutex_);
    MPI_CHECK(MPI_Iallgather(mine, n, MPI_BYTE, all, n, MPI_BYTE, coll_, &request));
  }
  wait(request, "exchanging step statistics (all-gather)");
}

void MpiLink::barrier() {
  check_usable();
  if (info_.processes == 1) return;
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard lock(mutex_);
    MPI_CHECK(MPI_Ibarrier(coll_, &request));
  }
  wait(request, "waiting for the other processes (barrier)");
}

void MpiLink::request_abort(const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (local_abort_.exchange(true)) return;
  broken_ = true;
  // Peers learn why instead of timing out; not when the failure came from a peer (they
  // already know), nor when there is nobody to tell.
  if (!remote_failure_.empty() || info_.processes == 1) return;
  abort_text_ = reason.empty() ? std::string("aborted") : reason;
  for (int p = 0; p < info_.processes; ++p) {
    if (p == info_.process) continue;
    MPI_Request r = MPI_REQUEST_NULL;
    // Small messages go out eagerly: delivered even if this process never polls again.
    if (MPI_Isend(abort_text_.data(), static_cast<int>(abort_text_.size()), MPI_CHAR, p, kTagAbort, ctrl_, &r) ==
        MPI_SUCCESS)
      MPI_Request_free(&r);
  }
}

void MpiLink::check() {
  std::string remote;
  {
    std::lock_guard lock(mutex_);
    if (broken_ || coll_ == MPI_COMM_NULL) return;   // the collectives report the rest
    service_control_locked();
    remote = remote_failure_;
  }
  if (remote.empty()) return;
  broken_ = true;   // this run ends with MPI_Abort: device work with the peer is left unfinished
  throw PeerFailure(remote);
}

void MpiLink::service_control_locked() {
  for (;;) {
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, ctrl_, &flag, &status) != MPI_SUCCESS || !flag) return;
    int len = 0;
    MPI_Get_count(&status, MPI_CHAR, &len);
    std::string text(std::size_t(std::max(0, len)), '\0');
    MPI_Recv(text.data(), len, MPI_CHAR, status.MPI_SOURCE, status.MPI_TAG, ctrl_, MPI_STATUS_IGNORE);
    const int from = status.MPI_SOURCE;
    if (status.MPI_TAG == kTagAbort) {
      if (remote_failure_.empty()) remote_failure_ = fmt::format("{} failed: {}", describe(from), text);
    } else if (status.MPI_TAG == kTagPing) {
      static const char pong = 'p';
      MPI_Request r = MPI_REQUEST_NULL;
      if (MPI_Isend(&pong, 1, MPI_CHAR, from, kTagPong, ctrl_, &r) == MPI_SUCCESS) MPI_Request_free(&r);
    } else if (status.MPI_TAG == kTagPong && std::size_t(from) < alive_.size()) {
      alive_[std::size_t(from)] = 1;
    }
  }
}

std::string MpiLink::diagnose_peers() { return diagnose(kPingWait); }

std::string MpiLink::diagnose(Clock::duration ping_wait) {
  const bool ping = ping_wait > Clock::duration::zero();
  std::vector<std::string> found;
  std::vector<int> remote;
  for (int p = 0; p < info_.processes; ++p) {
    if (p == info_.process) continue;
    if (peers_[std::size_t(p)].host != info_.host) {
      remote.push_back(p);
      continue;
    }
    const char state = process_state(peers_[std::size_t(p)].pid);
    if (state == 'X' || state == 'Z') found.push_back(describe(p) + " has died");
    else if (state == 'T') found.push_back(describe(p) + " is stopped (SIGSTOP)");
    else if (state == 't') found.push_back(describe(p) + " is stopped by a debugger");
  }
  if (ping && !remote.empty()) {
    static const char ping_byte = 'q';
    {
      std::lock_guard lock(mutex_);
      std::fill(alive_.begin(), alive_.end(), 0);
      for (int p : remote) {
        MPI_Request r = MPI_REQUEST_NULL;
        if (MPI_Isend(&ping_byte, 1, MPI_CHAR, p, kTagPing, ctrl_, &r) == MPI_SUCCESS) MPI_Request_free(&r);
      }
    }
    const auto until = Clock::now() + ping_wait;
    bool all_alive = false;
    while (!all_alive && Clock::now() < until) {
      {
        std::lock_guard lock(mutex_);
        service_control_locked();
        all_alive = std::all_of(remote.begin(), remote.end(), [&](int p) { return alive_[std::size_t(p)] != 0; });
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::lock_guard lock(mutex_);
    for (int p : remote)
      if (!alive_[std::size_t(p)]) found.push_back(describe(p) + " does not answer (hung, stopped or unreachable)");
  }
  if (found.empty())
    return "every other process is alive; one may be stuck in a long step or waiting elsewhere";
  std::string out;
  for (const auto& f : found) out += (out.empty() ? "" : "; ") + f;
  return out;
}

void MpiLink::wait(std::span<MPI_Request> requests, const char* what) {
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  Clock::time_point signal_seen{};
  for (long polls = 0;; ++polls) {
    int done = 0;
    std::string remote;
    {
      std::lock_guard lock(mutex_);
      MPI_CHECK(MPI_Testall(int(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE));
      service_control_locked();
      remote = remote_failure_;
    }
    if (done) return;
    // From here on the collective stays unfinished: the run can only end with MPI_Abort.
    if (local_abort_) {
      broken_ = true;
      throw BarrierAborted();
    }
    if (!remote.empty()) {
      broken_ = true;
      throw PeerFailure(remote);
    }
    const auto now = Clock::now();
    if (const int sig = termination_signal()) {
      if (signal_seen == Clock::time_point{}) signal_seen = now;
      if (now - signal_seen > kAfterSignal) {
        broken_ = true;
        throw PeerFailure(fmt::format("the run was ended by signal {} ({}) while {} — the launcher ends a run when "
                                      "a process dies: {}",
                                      sig, strsignal(sig), what, diagnose(kPingAfterSignal)));
      }
    }
    if (now > deadline) {
      broken_ = true;
      throw PeerFailure(fmt::format("no progress for {:.0f} s (--timeout) while {}: {}", timeout_s_, what,
                                    diagnose(kPingWait)));
    }
    // Spin first (peers usually arrive within microseconds), then give the core away between
    // polls: with more threads than cores a spinning waiter would slow the rank it waits for,
    // and with nobody else to run sched_yield returns at once, so a late peer costs no
    // latency. (Sleeping after 20,000 polls, as before, made a peer arriving some milliseconds
    // late wait up to 100 us more for every message the exchange needs a poll for.) Only a
    // wait far longer than any exchange sleeps between polls: a straggler, or a hang that the
    // watchdog will name.
    if (now - start > kSleepAfter) std::this_thread::sleep_for(kSleep);
    else if (polls > kSpinPolls) std::this_thread::yield();
  }
}

}  // namespace mb::mpi
