// libFuzzer target: the run_record parser (see fuzz_entry.h; corpus in tests/fuzz/run_record/, how to run
// in docs/testing.md).
#include <cstddef>
#include <cstdint>

#include "fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  mb::fuzz::run_record({reinterpret_cast<const char*>(data), size});
  return 0;
}
