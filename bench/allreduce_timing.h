// The all-reduce timing harness shared by allreduce_bench's thread and MPI paths: medians,
// and nccl-tests' bandwidths (the one busbw formula of the benchmarks).
#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

namespace mb::bench {

// Median of the samples (upper median for an even count); 0 for none.
inline double median(std::vector<double> samples) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// nccl-tests' algorithm bandwidth (bytes / time) and bus bandwidth: what each rank's link
// carries in a reduce-scatter + all-gather, algbw x 2(n-1)/n, comparable across n.
struct Bandwidth {
  double algbw_gbs = 0, busbw_gbs = 0;
};
inline Bandwidth all_reduce_bandwidth(double bytes, double seconds, int ranks) {
  if (seconds <= 0) return {};
  const double algbw = bytes / seconds / 1e9;
  return {algbw, algbw * 2.0 * (ranks - 1) / ranks};
}

// Inputs whose sums are exact in float: rank r's element i is (i % 7) + r.
inline float test_value(std::size_t i, int rank) { return float((i % 7) + std::size_t(rank)); }
inline float expected_sum(std::size_t i, int ranks) {
  return float(i % 7) * float(ranks) + float(ranks * (ranks - 1) / 2);
}

}  // namespace mb::bench
