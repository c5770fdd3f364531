// Runs a function on one thread per index and joins them all.
#pragma once
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace mb {

// Runs fn(i) for every i in [0, n) on its own thread, joins every thread, then rethrows the
// lowest index's failure on the caller's thread. Every thread is joined before anything is
// rethrown, so fn may capture the caller's locals by reference. (Test code: never QVERIFY
// inside fn — a failed check there does not reach the test's thread; throw instead.)
template <typename Fn>
void on_threads(int n, Fn&& fn) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n > 0 ? n : 0));
  std::vector<std::thread> threads;
  threads.reserve(errors.size());
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&fn, &errors, i] {
      try {
        fn(i);
      } catch (...) {
        errors[static_cast<std::size_t>(i)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace mb
