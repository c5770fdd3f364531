// The all-reduce timing harness shared by allreduce_bench's thread and MPI paths: medians,
// exactly summable inputs, and nccl-tests' bandwidths (util/bandwidth.h).
#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

#include "util/bandwidth.h"

namespace mb::bench {

// Median of the samples (upper median for an even count); 0 for none.
inline double median(std::vector<double> samples) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

using mb::all_reduce_bandwidth;

// Inputs whose sums are exact in float: rank r's element i is (i % 7) + r.
inline float test_value(std::size_t i, int rank) { return float((i % 7) + std::size_t(rank)); }
inline float expected_sum(std::size_t i, int ranks) {
  return float(i % 7) * float(ranks) + float(ranks * (ranks - 1) / 2);
}

}  // namespace mb::bench
