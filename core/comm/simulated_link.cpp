// The simulated link (see simulated_link.h): every call forwards to the wrapped communicator;
// all_reduce_sum then idles until the ring's time over the simulated link has passed.
#include "comm/simulated_link.h"

#include "comm/forwarding_communicator.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>
#include <utility>
#include <vector>

#include "util/bandwidth.h"
#include "util/error.h"

namespace mb {
namespace {

class SimulatedLinkCommunicator final : public ForwardingCommunicator {
 public:
  SimulatedLinkCommunicator(std::unique_ptr<Communicator> inner, const SimulatedLink& link, LinkSleep sleep)
      : ForwardingCommunicator(std::move(inner)), link_(link), sleep_(std::move(sleep)) {}

  std::string name() const override { return inner_->name() + " [simulated link]"; }

  void all_reduce_sum(float* data, std::size_t count) override {
    using Clock = std::chrono::steady_clock;
    // Times the inner collective gathered before this call belong to earlier collectives.
    pending_ += inner_->take_times();
    const auto t0 = Clock::now();
    inner_->all_reduce_sum(data, count);
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    CollectiveTimes mine = inner_->take_times();
    // A communicator that does not split its time (reports nothing): all of it was exchange.
    if (mine.wait_s == 0 && mine.transfer_s == 0) mine.transfer_s = elapsed;
    const double per_fp32_byte = double(inner_->all_reduce_wire_bytes()) / sizeof(float);   // what travels
    double extra = 0;
    if (overlap_.empty()) {
      const double bytes = double(count) * sizeof(float) * per_fp32_byte;
      extra = simulated_exchange_s(link_, bytes, size(), mine.transfer_s) - mine.transfer_s;
    } else {
      const WireSchedule wire = overlapped_wire(link_, agreed_buckets(mine.wait_s), size(), per_fp32_byte);
      pending_ += inner_->take_times();   // the agreement's own small exchange
      extra = wire.exposed_s - mine.transfer_s;
      mine.hidden_s += wire.hidden_s;
      overlap_.clear();
    }
    if (extra > 0) sleep_(extra);
    mine.transfer_s += std::max(0.0, extra);
    pending_ += mine;
  }

  void overlap_next_all_reduce(std::span<const OverlapBucket> buckets) override {
    overlap_.assign(buckets.begin(), buckets.end());
  }

 private:
  // A bucket travels once every rank completed it. Each rank's lead counted from the moment the
  // last rank arrived (its own lead plus its wait for the others): the smallest over the ranks.
  // Every rank gathers the same leads, so every rank sleeps the same.
  std::vector<OverlapBucket> agreed_buckets(double my_wait_s) {
    const std::size_t n = overlap_.size();
    std::vector<double> mine(n), all(n * std::size_t(size()));
    for (std::size_t b = 0; b < n; ++b) mine[b] = my_wait_s + overlap_[b].lead_s;
    inner_->all_gather_bytes(mine.data(), n * sizeof(double), all.data());
    std::vector<OverlapBucket> out = overlap_;
    for (std::size_t b = 0; b < n; ++b) {
      out[b].lead_s = all[b];
      for (int r = 1; r < size(); ++r) out[b].lead_s = std::min(out[b].lead_s, all[std::size_t(r) * n + b]);
    }
    return out;
  }

  std::vector<OverlapBucket> overlap_;   // the next all-reduce's buckets (empty: none announced)
  const SimulatedLink link_;
  const LinkSleep sleep_;
};

void sleep_seconds(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

}  // namespace

std::span<const LinkPreset> link_presets() {
  static const LinkPreset kPresets[] = {
      {"NVLink 4 (H100)", {3600, 1}, "NVIDIA H100 datasheet: 900 GB/s total, 450 GB/s each way; ~1 us"},
      {"PCIe 4.0 x16", {256, 2}, "PCI-SIG: 16 GT/s x 16 lanes, ~32 GB/s each way; ~1-2 us"},
      {"100 GbE (RDMA)", {100, 3}, "IEEE 802.3 100GBASE; RoCE/InfiniBand-class latency ~2-3 us"},
      {"10 GbE (TCP)", {10, 25}, "IEEE 802.3 10GBASE-T; kernel TCP round trips ~20-50 us"},
      {"1 GbE (TCP)", {1, 50}, "IEEE 802.3 1000BASE-T; kernel TCP ~50 us"},
  };
  return kPresets;
}

double simulated_exchange_s(const SimulatedLink& link, double bytes, int ranks, double real_s) {
  return std::max(real_s, ring_all_reduce_s(bytes, ranks, link.gbit, link.latency_us));
}

WireSchedule overlapped_wire(const SimulatedLink& link, std::span<const OverlapBucket> buckets, int ranks,
                             double bytes_per_fp32_byte) {
  double free_at = -std::numeric_limits<double>::infinity(), busy = 0;
  for (const OverlapBucket& b : buckets) {
    const double wire = ring_all_reduce_s(b.bytes * bytes_per_fp32_byte, ranks, link.gbit, link.latency_us);
    free_at = std::max(free_at, -std::max(0.0, b.lead_s)) + wire;
    busy += wire;
  }
  // After time 0 every bucket is ready: the wire runs without a gap until free_at.
  const double exposed = buckets.empty() ? 0.0 : std::max(0.0, free_at);
  return {exposed, std::max(0.0, busy - exposed)};
}

std::unique_ptr<Communicator> make_simulated_link(std::unique_ptr<Communicator> inner, const SimulatedLink& link,
                                                  LinkSleep sleep) {
  MB_CHECK(link.gbit > 0, ConfigError, "--simulated-link: the bandwidth must be above 0 Gbit/s (got {})", link.gbit);
  MB_CHECK(inner->memory_space() == MemorySpace::Host, ConfigError,
           "--simulated-link simulates a link between CPU replicas only");
  return std::make_unique<SimulatedLinkCommunicator>(std::move(inner), link, sleep ? std::move(sleep) : sleep_seconds);
}

}  // namespace mb
