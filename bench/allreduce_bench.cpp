// The host all-reduce over a size sweep, nccl-tests style: for N replica threads (the
// communicator the trainer uses for CPU replicas) and buffers from 4 KiB to 64 MiB, the time
// per all-reduce (median of the iterations, rank 0's view: it cannot finish before every rank
// has contributed), the algorithm bandwidth (bytes / time) and the bus bandwidth (algbw x
// 2(N-1)/N, what each rank's link carries in a reduce-scatter + all-gather: comparable across
// N). Every result is checked exactly (inputs are small integers, sums exact in float).
//   build/bin/allreduce_bench [--replicas 2,4] [--iters 20]
//   build/bin/allreduce_bench --lockstep [--replicas 2] [--iters 9]   what lock-step
//                         synchronisation costs a training step (lockstep_cost.cpp)
// The row marked "model" is the CNN's gradient (121,930 floats), the size the trainer reduces.
// Started by mpirun it times the MPI path instead (allreduce_mpi.cpp): the link the trainer
// uses between processes against Open MPI's own MPI_Allreduce, side by side.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "allreduce_mpi.h"
#include "allreduce_timing.h"
#include "lockstep_cost.h"
#include "util/on_threads.h"
#include "backends/devices.h"
#include "comm/launch.h"
#include "comm/communicator.h"
#include "model/cnn_spec.h"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    out.push_back(std::stoi(text.substr(begin, end - begin)));
    begin = end + 1;
  }
  return out;
}

// Median seconds per all-reduce of `count` floats over `replicas` threads; false if any rank's
// result was not the exact sum.
bool time_all_reduce(int replicas, std::size_t count, int iters, double* median_s) {
  auto comms = mb::make_communicators(mb::parse_devices(fmt::format("cpu:{}", replicas)), nullptr);
  std::vector<double> times;
  std::vector<char> exact(std::size_t(replicas), 1);
  mb::on_threads(replicas, [&](int r) {
      mb::Communicator& c = *comms[std::size_t(r)];
      c.connect();
      std::vector<float> buf(count);
      for (int it = -2; it < iters; ++it) {   // two untimed warm-up rounds
        for (std::size_t i = 0; i < count; ++i) buf[i] = mb::bench::test_value(i, r);
        c.barrier();
        const auto t0 = Clock::now();
        c.all_reduce_sum(buf.data(), count);
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        if (r == 0 && it >= 0) times.push_back(s);
        for (std::size_t i = 0; i < count; ++i)
          if (buf[i] != mb::bench::expected_sum(i, replicas)) exact[std::size_t(r)] = 0;
      }
    });
  *median_s = mb::bench::median(times);
  return std::all_of(exact.begin(), exact.end(), [](char e) { return e != 0; });
}

}  // namespace

int main(int argc, char** argv) {
  if (mb::detect_launch().launched()) return mb::bench::run_mpi_bench(argc, argv);
  std::vector<int> replica_counts{2, 4};
  int iters = 20;
  bool lockstep = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--lockstep") {
      lockstep = true;
    } else if (a == "--replicas" && i + 1 < argc) {
      replica_counts = parse_list(argv[++i]);
    } else if (a == "--iters" && i + 1 < argc) {
      iters = std::max(1, std::stoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: allreduce_bench [--lockstep] [--replicas 2,4] [--iters 20]\n");
      return 2;
    }
  }
  if (lockstep) return mb::bench::run_lockstep_cost(replica_counts, std::min(iters, 9));
  std::vector<std::size_t> counts;
  for (std::size_t bytes = 4096; bytes <= (64u << 20); bytes *= 4) counts.push_back(bytes / sizeof(float));
  counts.push_back(std::size_t(mb::cnn::kReferenceParams));
  std::sort(counts.begin(), counts.end());

  std::printf("host all-reduce (hierarchical communicator, threads), %u hardware threads, median of %d\n",
              std::thread::hardware_concurrency(), iters);
  bool all_exact = true;
  for (int n : replica_counts) {
    std::printf("\n%-9s %12s %12s %12s %12s  %s\n", "replicas", "bytes", "time_us", "algbw_GB/s", "busbw_GB/s", "");
    for (std::size_t count : counts) {
      double s = 0;
      const bool exact = time_all_reduce(n, count, iters, &s);
      all_exact = all_exact && exact;
      const double bytes = double(count) * sizeof(float);
      const mb::AllReduceBandwidth bw = mb::bench::all_reduce_bandwidth(bytes, s, n);
      std::printf("%-9d %12.0f %12.1f %12.2f %12.2f  %s%s\n", n, bytes, s * 1e6, bw.algbw_gbs, bw.busbw_gbs,
                  count == std::size_t(mb::cnn::kReferenceParams) ? "model " : "", exact ? "" : "WRONG SUM");
    }
  }
  return all_exact ? 0 : 1;
}
