// libFuzzer target: the model text parser, model_from_text (see fuzz_entry.h; corpus in
// tests/fuzz/model_text/, how to run in docs/testing.md).
#include <cstddef>
#include <cstdint>

#include "fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  mb::fuzz::model_text({reinterpret_cast<const char*>(data), size});
  return 0;
}
