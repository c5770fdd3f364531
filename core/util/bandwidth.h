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

// How long a flat ring all-reduce of `bytes` among `ranks` takes over links of `gbit` Gbit/s
// (1e9 bits/s) and `latency_us` microseconds per hop: a reduce-scatter and an all-gather,
// 2(n-1) steps, each sending bytes/n and paying the latency once. 0 for one rank.
inline double ring_all_reduce_s(double bytes, int ranks, double gbit, double latency_us) {
  if (ranks < 2 || gbit <= 0) return 0;
  const double steps = 2.0 * (ranks - 1);
  return steps / ranks * bytes * 8.0 / (gbit * 1e9) + steps * latency_us * 1e-6;
}

}  // namespace mb
