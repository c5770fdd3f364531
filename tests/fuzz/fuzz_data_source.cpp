// libFuzzer target: the --data value's synthetic form, parse_synthetic_source (see
// fuzz_entry.h; corpus in tests/fuzz/data_source/, how to run in docs/testing.md).
#include <cstddef>
#include <cstdint>

#include "fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  mb::fuzz::data_source({reinterpret_cast<const char*>(data), size});
  return 0;
}
