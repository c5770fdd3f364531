// The replica threads of one training run, and a join that does not hang on a thread stuck
// inside a device driver. Every wait of ours has a deadline (--timeout), but a driver call
// that never returns (cudaFree behind a kernel that never ends) cannot be interrupted: once
// the run has failed, the threads still running get a grace period, and those that have not
// ended by then are reported as stuck. The join then goes on waiting, because the stuck
// threads still use the run's state: the process must end (the CLI exits) or be restarted
// (the GUI says so); pretending to recover would leave a thread inside the driver.
#pragma once
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mb {

class ReplicaThreads {
 public:
  explicit ReplicaThreads(int count);
  ~ReplicaThreads();  // joins whatever was started (never destroys a joinable thread)
  ReplicaThreads(const ReplicaThreads&) = delete;
  ReplicaThreads& operator=(const ReplicaThreads&) = delete;

  // Starts thread `index` (0 .. count-1) running fn; throws std::system_error as std::thread does.
  void start(int index, std::function<void()> fn);

  // Waits until every started thread has ended. From the moment failed() first returns true
  // (polled every 50 ms), the threads still running have grace_s to end; on_stuck gets the
  // indices of those that did not, once, and then the wait goes on.
  void join(const std::function<bool()>& failed, double grace_s,
            const std::function<void(const std::vector<int>&)>& on_stuck);

 private:
  std::mutex mutex_;
  std::condition_variable ended_;
  std::vector<std::thread> threads_;
  std::vector<char> started_, done_;  // per index, under mutex_
};

// "replica 1 did not end within 120 s after the run failed: it is stuck inside the device
// driver (or a library call), which cannot be interrupted; the process must be restarted".
std::string stuck_threads_message(const std::vector<int>& ranks, double grace_s);

}  // namespace mb
