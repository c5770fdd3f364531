// Caps the address space for a scope (tests that need a large allocation to fail).
#pragma once
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

namespace mb::test {

// Caps the address space for a scope, so that an allocation sized from a corrupt header
// fails the test (bad_alloc is not a DataError) instead of passing quietly.
class AddressSpaceCap {
 public:
  explicit AddressSpaceCap(rlim_t headroom) {
    if (getrlimit(RLIMIT_AS, &old_) != 0) return;
    std::ifstream statm("/proc/self/statm");
    long pages = 0;
    if (!(statm >> pages)) return;
    rlimit cap = old_;
    cap.rlim_cur = rlim_t(pages) * rlim_t(sysconf(_SC_PAGESIZE)) + headroom;
    if (old_.rlim_max != RLIM_INFINITY && cap.rlim_cur > old_.rlim_max) return;
    active_ = setrlimit(RLIMIT_AS, &cap) == 0;
  }
  ~AddressSpaceCap() {
    if (active_) setrlimit(RLIMIT_AS, &old_);
  }
  AddressSpaceCap(const AddressSpaceCap&) = delete;
  AddressSpaceCap& operator=(const AddressSpaceCap&) = delete;

 private:
  rlimit old_{};
  bool active_ = false;
};

}  // namespace mb::test
