// libFuzzer target: the CIFAR-10 batch reader (see fuzz_entry.h; corpus in
// tests/fuzz/cifar/, how to run in docs/testing.md).
#include <cstddef>
#include <cstdint>

#include "fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  mb::fuzz::cifar({reinterpret_cast<const char*>(data), size});
  return 0;
}
