// nccl-tests' bandwidths of an all-reduce: the one formula used by the benchmarks, the
// calibration and the engines' communication profiles.
#pragma once

namespace mb {

// algbw = bytes / time; busbw = algbw x 2(n-1)/n: what each rank's link carries in a
// reduce-scatter + all-gather, so it is comparable across rank counts (GB/s, 1e9 bytes/s).
struct AllReduceBandwidth {
  double algbw_gbs = 0, busbw_gbs = 0;
};

inline AllReduceBandwidth all_reduce_bandwidth(double bytes, double seconds, int ranks) {
  if (seconds <= 0 || ranks <= 0) return {};
  const double algbw = bytes / seconds / 1e9;
  return {algbw, algbw * 2.0 * (ranks - 1) / ranks};
}

}  // namespace mb
