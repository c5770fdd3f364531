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

// How long a rank keeps waiting after the launcher's SIGTERM: healthy peers got the same
// signal and finish the collective in well under this; Open MPI's mpirun kills the rest
// one second after the SIGTERM, which is the time left to write a record.
constexpr auto kAfterSignal = std::chrono::milliseconds(250);
constexpr auto kPingWait = std::chrono::seconds(2);

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

void MpiLink::all_reduce_sum(float* data, std::size_t count) {
  check_usable();
  const int n = info_.processes;
  if (n == 1 || count == 0) return;
  checked_int(count, "all-reduce");
  // Process p owns elements [displs[p], displs[p] + counts[p]): it alone sums them, so every
  // process receives the same bits in the all-gather.
  std::vector<int> counts(static_cast<std::size_t>(n)), displs(static_cast<std::size_t>(n));
  const std::size_t chunk = (count + n - 1) / n;
  for (int p = 0; p < n; ++p) {
    const std::size_t begin = std::min(count, chunk * std::size_t(p));
    displs[p] = static_cast<int>(begin);
    counts[p] = static_cast<int>(std::min(count, begin + chunk) - begin);
  }
  const int me = info_.process;
  scratch_.resize(std::max<std::size_t>(1, std::size_t(counts[me])));
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard lock(mutex_);
    MPI_CHECK(MPI_Ireduce_scatter(data, scratch_.data(), counts.data(), MPI_FLOAT, MPI_SUM, coll_, &request));
  }
  wait(request, "summing the gradients (reduce-scatter)");
  std::memcpy(data + displs[me], scratch_.data(), std::size_t(counts[me]) * sizeof(float));
  {
    std::lock_guard lock(mutex_);
    MPI_CHECK(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, counts.data(), displs.data(), MPI_FLOAT, coll_,
                              &request));
  }
  wait(request, "summing the gradients (all-gather)");
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

std::string MpiLink::diagnose(bool ping) {
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
    const auto until = Clock::now() + kPingWait;
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

void MpiLink::wait(MPI_Request& request, const char* what) {
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  Clock::time_point signal_seen{};
  for (long polls = 0;; ++polls) {
    int done = 0;
    std::string remote;
    {
      std::lock_guard lock(mutex_);
      MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
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
                                      sig, strsignal(sig), what, diagnose(false)));
      }
    }
    if (now > deadline) {
      broken_ = true;
      throw PeerFailure(fmt::format("no progress for {:.0f} s (--timeout) while {}: {}", timeout_s_, what,
                                    diagnose(true)));
    }
    // Spin first (peers usually arrive within microseconds), then yield the core, then sleep:
    // with more threads than cores a spinning waiter would slow the rank it waits for.
    if (polls > 20000) std::this_thread::sleep_for(std::chrono::microseconds(100));
    else if (polls > 2000) std::this_thread::yield();
  }
}

}  // namespace mb::mpi
