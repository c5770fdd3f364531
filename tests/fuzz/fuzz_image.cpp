// libFuzzer target: the PNG and JPEG decoders (see fuzz_entry.h; corpus in
// tests/fuzz/image/, how to run in docs/testing.md).
#include <cstddef>
#include <cstdint>

#include "fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  mb::fuzz::image({reinterpret_cast<const char*>(data), size});
  return 0;
}
