// Word-at-a-time multiply-xorshift digest (see digest.h): each 8-byte word is mixed into the
// state with a 64-bit multiply and rotation; the length and a SplitMix64 finaliser close it.
// ~1 byte per cycle, so hashing the whole Fashion-MNIST (55 MB) costs tens of milliseconds.
#include "util/digest.h"

#include <cstring>

#include <fmt/format.h>

namespace mb {
namespace {

constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t mix(uint64_t h, uint64_t w) { return rotl((h ^ w) * kMul, 29) * 0xBF58476D1CE4E5B9ull; }
inline uint64_t finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

Digest& Digest::add(const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);   // little-endian hosts only agree with each other: fine here
    h_ = mix(h_, w);
  }
  if (i < bytes) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, bytes - i);
    h_ = mix(h_, w ^ (uint64_t(bytes - i) << 56));
  }
  length_ += bytes;
  return *this;
}

uint64_t Digest::value() const { return finalize(h_ ^ length_ * kMul); }

uint64_t digest64(const void* data, std::size_t bytes) { return Digest().add(data, bytes).value(); }

std::string digest_hex(uint64_t digest) { return fmt::format("{:016x}", digest); }

}  // namespace mb
