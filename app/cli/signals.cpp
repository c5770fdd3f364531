// SIGINT/SIGTERM/SIGHUP as stop requests, installed with sigaction (see signals.h).
#include "signals.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <stdexcept>

#include "util/termination.h"

namespace mb::cli {
namespace {

// SIGUSR1: a stop request from the program that started the run; mpirun forwards it to
// every process (it turns SIGINT and SIGTERM into a kill of the whole job instead).
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1};

std::atomic<StopOnSignals::StopFn> g_stop{nullptr};
std::atomic<void*> g_context{nullptr};
volatile std::sig_atomic_t g_received = 0;
std::atomic<bool> g_active{false};
static_assert(std::atomic<StopOnSignals::StopFn>::is_always_lock_free && std::atomic<void*>::is_always_lock_free,
              "the handler may only touch lock-free atomics");

struct Saved {
  struct sigaction old {};
  bool installed = false;
};
Saved g_saved[sizeof(kSignals) / sizeof(kSignals[0])];

extern "C" void on_stop_signal(int sig) {
  if (g_received != 0) _exit(128 + sig);   // a second signal: the user does not want to wait
  g_received = sig;
  // Also for waits on other processes: when a launcher ends a run because one process died,
  // the survivors must notice while they wait on the dead one (comm/mpi/mpi_link.cpp).
  note_termination_signal(sig);
  if (StopOnSignals::StopFn fn = g_stop.load()) fn(g_context.load());
}

}  // namespace

StopOnSignals::StopOnSignals(StopFn on_stop, void* context) {
  if (g_active.exchange(true)) throw std::logic_error("StopOnSignals: one guard at a time");
  g_received = 0;
  g_context.store(context);
  g_stop.store(on_stop);
  for (std::size_t i = 0; i < std::size(kSignals); ++i) {
    struct sigaction current {};
    if (sigaction(kSignals[i], nullptr, &current) != 0 || current.sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (int s : kSignals) sigaddset(&sa.sa_mask, s);   // one handler at a time
    sa.sa_flags = SA_RESTART;                            // file writes in progress carry on
    g_saved[i].installed = sigaction(kSignals[i], &sa, &g_saved[i].old) == 0;
  }
}

StopOnSignals::~StopOnSignals() {
  for (std::size_t i = 0; i < std::size(kSignals); ++i) {
    if (g_saved[i].installed) sigaction(kSignals[i], &g_saved[i].old, nullptr);
    g_saved[i].installed = false;
  }
  g_stop.store(nullptr);
  g_context.store(nullptr);
  g_active.store(false);
}

int StopOnSignals::received() const { return g_received; }

const char* StopOnSignals::name(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGUSR1: return "SIGUSR1";
    default: return "a signal";
  }
}

}  // namespace mb::cli
