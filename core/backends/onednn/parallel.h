// Splits the batch of a hand-written CPU kernel across the calling replica thread's OpenMP
// threads (the engine's `threads`; 1 by default, then no parallel region at all).
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace mb::onednn {

// Runs f(begin, end) on one contiguous range of [0, n) per thread. f must not throw (an
// exception cannot leave an OpenMP region) and must write only its own range, so results are
// the same for any thread count.
template <typename F>
void parallel_ranges(int n, F&& f) {
  const int threads = std::min(omp_get_max_threads(), n);
  if (threads <= 1) {
    f(0, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
    f(static_cast<int>(n * t / count), static_cast<int>(n * (t + 1) / count));
  }
}

}  // namespace mb::onednn
