// The process-wide termination flag (see termination.h).
#include "util/termination.h"

#include <atomic>

namespace mb {
namespace {
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the flag is set from signal handlers");
}  // namespace

void note_termination_signal(int signo) noexcept { g_signal.store(signo, std::memory_order_relaxed); }
int termination_signal() noexcept { return g_signal.load(std::memory_order_relaxed); }
void clear_termination_signal() noexcept { g_signal.store(0, std::memory_order_relaxed); }

}  // namespace mb
