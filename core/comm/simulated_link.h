// A simulated link, for demonstrations: wraps a host communicator so that each gradient
// all-reduce (the data plane) lasts at least what a flat ring over links of GBIT Gbit/s and US
// microseconds would take (util/bandwidth.h ring_all_reduce_s), however fast this machine's own
// exchange is. With buckets announced (overlap_next_all_reduce, --bucket-mb) the wire's time
// before the call ran under the backward pass: only what is left of it is slept and counted. The extra time is slept after the real exchange and counted as exchange
// (CollectiveTimes::transfer_s), not as waiting: every rank leaves the real all-reduce together,
// so every rank sleeps about the same. The control plane (weights, statistics, digests) is not
// slowed. Labelled "simulated link" wherever it shows (Scenario::link); never a baseline.
#pragma once
#include <functional>
#include <memory>
#include <span>

#include "comm/communicator.h"
#include "config/scenario.h"

namespace mb {

// Links to simulate, with what their numbers are (one direction, typical, not this machine's).
struct LinkPreset {
  const char* label;    // "10 GbE"
  SimulatedLink link;
  const char* source;   // where the numbers come from
};
std::span<const LinkPreset> link_presets();

// How a wrapper idles: std::this_thread::sleep_for by default; tests pass a fake clock.
using LinkSleep = std::function<void(double seconds)>;

// The exchange time of one all-reduce of `bytes` whose real exchange took `real_s`: the
// larger of the two (the wrapper sleeps the difference).
double simulated_exchange_s(const SimulatedLink& link, double bytes, int ranks, double real_s);

// Buckets on the wire while the backward pass still runs (--bucket-mb): each bucket's ring
// starts when its gradient is complete and the wire is free (one bucket at a time, in order),
// and pays the link's latency of its own. Time 0 is the end of the backward pass. `exposed_s`:
// the wire time left after it; `hidden_s`: the wire time before it, under the backward pass.
struct WireSchedule {
  double exposed_s = 0, hidden_s = 0;
};
WireSchedule overlapped_wire(const SimulatedLink& link, std::span<const OverlapBucket> buckets, int ranks,
                             double bytes_per_fp32_byte);

std::unique_ptr<Communicator> make_simulated_link(std::unique_ptr<Communicator> inner, const SimulatedLink& link,
                                                  LinkSleep sleep = {});

}  // namespace mb
