// The compressed all-reduce wrapper (see compressed_all_reduce.h): round (and for fp16 scale)
// before, the inner communicator's exchange of representable values, unscale after. The
// rounding and scaling count as exchange time (they are the codec of the wire).
#include "comm/compressed_all_reduce.h"

#include "comm/forwarding_communicator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "util/error.h"

namespace mb {
namespace {

using Clock = std::chrono::steady_clock;

class CompressedAllReduce final : public ForwardingCommunicator {
 public:
  CompressedAllReduce(std::unique_ptr<Communicator> inner, WireDtype wire)
      : ForwardingCommunicator(std::move(inner)), wire_(wire) {}

  void all_reduce_sum(float* data, std::size_t count) override {
    if (size() == 1 || count == 0) return;
    const std::span<float> values(data, count);
    pending_ += inner_->take_times();
    const float scale = wire_ == WireDtype::Fp16 ? agreed_fp16_scale(values) : 1.0f;
    // The scale's agreement is a (tiny) exchange of its own: its wait is waiting.
    pending_ += inner_->take_times();
    const auto t1 = Clock::now();
    if (scale != 1.0f)
      for (float& v : values) v *= scale;
    round_to_wire(values, wire_);
    inner_->all_reduce_sum_as(data, count, wire_);
    if (scale != 1.0f) {
      const float inverse = 1.0f / scale;   // a power of two: exact
      for (float& v : values) v *= inverse;
    }
    CollectiveTimes inner = inner_->take_times();
    // The codec (scaling, rounding) is the exchange's own work.
    const double total = std::chrono::duration<double>(Clock::now() - t1).count();
    inner.transfer_s += std::max(0.0, total - inner.wait_s - inner.transfer_s);
    pending_ += inner;
  }
  std::size_t all_reduce_wire_bytes() const override { return wire_bytes(wire_); }

 private:
  // Every rank's largest magnitude, gathered: every rank computes the same scale from them.
  float agreed_fp16_scale(std::span<const float> values) {
    float largest = 0.0f;
    for (const float v : values) largest = std::max(largest, std::fabs(v));   // NaN never wins a max
    const std::vector<float> all = inner_->all_gather(largest);
    return fp16_prescale(*std::max_element(all.begin(), all.end()), size());
  }

  const WireDtype wire_;
};

}  // namespace

float fp16_prescale(float largest, int ranks) {
  if (!(std::isfinite(largest) && largest > 0.0f) || ranks < 1) return 1.0f;
  // The largest power of two with ranks x largest x 2^e <= 65504, within FP32's exact range.
  int e = std::clamp(static_cast<int>(std::floor(std::log2(double(kFp16Max) / (double(ranks) * double(largest))))),
                     -100, 100);
  while (e > -100 && double(ranks) * double(largest) * std::ldexp(1.0, e) > double(kFp16Max)) --e;   // log2's rounding
  return std::ldexp(1.0f, e);
}

std::unique_ptr<Communicator> make_compressed_all_reduce(std::unique_ptr<Communicator> inner, WireDtype wire) {
  MB_CHECK(inner->memory_space() == MemorySpace::Host, ConfigError,
           "--allreduce-dtype {}: the compressed all-reduce runs between CPU replicas in this version",
           wire_name(wire));
  if (wire == WireDtype::Fp32) return inner;
  return std::make_unique<CompressedAllReduce>(std::move(inner), wire);
}

}  // namespace mb
