// libFuzzer target: the Keras model file reader, import_keras_json / import_keras_archive (see
// fuzz_entry.h; corpus in tests/fuzz/keras/, how to run in docs/testing.md).
#include <cstddef>
#include <cstdint>

#include "fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  mb::fuzz::keras({reinterpret_cast<const char*>(data), size});
  return 0;
}
