// A 64-bit digest of bytes, for "are these the same?" across replicas and processes (the
// parameters after every epoch, the data set before training): equal bytes give equal
// digests on every machine; a difference changes it with probability 1 - 2^-64. Not
// cryptographic: nothing here defends against a crafted collision.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace mb {

class Digest {
 public:
  Digest& add(const void* data, std::size_t bytes);
  uint64_t value() const;

 private:
  uint64_t h_ = 0x6A09E667F3BCC908ull;
  uint64_t length_ = 0;
};

uint64_t digest64(const void* data, std::size_t bytes);
std::string digest_hex(uint64_t digest);   // 16 lowercase hex digits

}  // namespace mb
