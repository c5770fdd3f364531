// allreduce_bench's MPI path (see allreduce_mpi.h), nccl-tests style. Every variant is timed
// the same way, in one run, alternating: a barrier, then (late-arrival rows) the last rank
// sleeping some milliseconds, then the call. Each rank notes when its call started and ended
// on CLOCK_MONOTONIC; an iteration's exchange time is the last end minus the last start: how
// long the exchange took once every rank was there, waiting excluded, one definition for Open
// MPI's MPI_Allreduce and for the link alike (the emulated hosts of scripts/two-hosts.sh share
// one kernel, hence one clock; across real machines only the link's own column holds). The
// link's own account of its exchange, what run records show as the all-reduce's transfer
// time, is printed beside it. Every result is checked exactly.
//   mpirun -np 2 --mca btl self,vader --mca oob_tcp_if_include lo build/bin/allreduce_bench
//       [--iters 200] [--late-ms 5] [--count 121930] [--diagnose]
// --diagnose adds rows that split the time: the link barrier alone, Open MPI's non-blocking
// collectives waited with MPI_Wait, and the blocking reduce-scatter + all-gather.
#include "allreduce_mpi.h"

#include <cstdio>
#include <string>

#ifdef MB_HAVE_MPI
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "allreduce_timing.h"
#include "comm/communicator.h"
#include "comm/hierarchical_communicator.h"
#include "comm/launch.h"
#include "comm/mpi_session.h"
#include "model/cnn_spec.h"
#endif

namespace mb::bench {

#ifndef MB_HAVE_MPI
int run_mpi_bench(int, char**) {
  std::fprintf(stderr, "allreduce_bench: started by a launcher, but this build has no MPI (-DMB_WITH_MPI=ON)\n");
  return 2;
}
#else
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Options {
  int iters = 200;
  double late_ms = 5;
  std::size_t count = std::size_t(cnn::kReferenceParams);
  bool diagnose = false;
};

struct Variant {
  std::string name;
  bool late = false;                     // the last rank arrives late_ms after the others
  std::function<void(float*, std::size_t)> call;
  bool link = false;                     // the link: also keep its own exchange time
  bool reduces = true;                   // false: a barrier, nothing to check
  std::vector<double> start, end, own;   // per iteration, this rank
  bool exact = true;
};

Variant variant(std::string name, bool late, std::function<void(float*, std::size_t)> call, bool link = false,
                bool reduces = true) {
  Variant v;
  v.name = std::move(name);
  v.late = late;
  v.call = std::move(call);
  v.link = link;
  v.reduces = reduces;
  return v;
}

// The samples of every rank, at process 0 (rank-major).
std::vector<double> gather(const std::vector<double>& mine, int ranks) {
  std::vector<double> all(mine.size() * std::size_t(ranks));
  MPI_Gather(mine.data(), int(mine.size()), MPI_DOUBLE, all.data(), int(mine.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return all;
}

void time_round(Variant& v, std::vector<float>& buf, int rank, int ranks, const Options& o, bool timed) {
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = test_value(i, rank);
  MPI_Barrier(MPI_COMM_WORLD);
  if (v.late && rank == ranks - 1) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o.late_ms));
  const double t0 = now_s();
  v.call(buf.data(), buf.size());
  const double t1 = now_s();
  if (timed) {
    v.start.push_back(t0);
    v.end.push_back(t1);
  }
  if (v.reduces)
    for (std::size_t i = 0; i < buf.size(); ++i)
      if (buf[i] != expected_sum(i, ranks)) v.exact = false;
}

int parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc) o.iters = std::max(1, std::stoi(argv[++i]));
    else if (a == "--late-ms" && i + 1 < argc) o.late_ms = std::stod(argv[++i]);
    else if (a == "--count" && i + 1 < argc) o.count = std::size_t(std::max(1L, std::stol(argv[++i])));
    else if (a == "--diagnose") o.diagnose = true;
    else return 2;
  }
  return 0;
}

std::vector<Variant> variants(Communicator& link, ProcessLink& process_link, MPI_Comm world, const Options& o) {
  auto mpi_allreduce = [world](float* d, std::size_t n) {
    MPI_Allreduce(MPI_IN_PLACE, d, int(n), MPI_FLOAT, MPI_SUM, world);
  };
  auto via_link = [&link](float* d, std::size_t n) { link.all_reduce_sum(d, n); };
  std::vector<Variant> out;
  out.push_back(variant("MPI_Allreduce (Open MPI)", false, mpi_allreduce));
  out.push_back(variant("mirrorbench MPI link", false, via_link, true));
  if (o.late_ms > 0) {
    out.push_back(variant(fmt::format("MPI_Allreduce, last rank {:g} ms late", o.late_ms), true, mpi_allreduce));
    out.push_back(variant(fmt::format("mirrorbench link, last rank {:g} ms late", o.late_ms), true, via_link, true));
  }
  if (!o.diagnose) return out;
  int ranks = 1;
  MPI_Comm_size(world, &ranks);
  // Where the link's time goes: its pieces, one at a time.
  out.push_back(variant("  diag: link barrier alone", false, [&process_link](float*, std::size_t) { process_link.barrier(); },
                 false, false));
  out.push_back(variant("  diag: MPI_Ibarrier + MPI_Wait", false,
                 [world](float*, std::size_t) {
                   MPI_Request r;
                   MPI_Ibarrier(world, &r);
                   MPI_Wait(&r, MPI_STATUS_IGNORE);
                 },
                 false, false));
  auto split = [ranks](std::size_t n, std::vector<int>& counts, std::vector<int>& displs) {
    counts.assign(std::size_t(ranks), 0);
    displs.assign(std::size_t(ranks), 0);
    const std::size_t chunk = (n + ranks - 1) / ranks;
    for (int p = 0; p < ranks; ++p) {
      const std::size_t b = std::min(n, chunk * std::size_t(p));
      displs[std::size_t(p)] = int(b);
      counts[std::size_t(p)] = int(std::min(n, b + chunk) - b);
    }
  };
  out.push_back(variant("  diag: Ireduce_scatter+Iallgatherv, MPI_Wait", false, [world, split](float* d, std::size_t n) {
                   int me = 0;
                   MPI_Comm_rank(world, &me);
                   std::vector<int> counts, displs;
                   split(n, counts, displs);
                   std::vector<float> mine(std::size_t(std::max(1, counts[std::size_t(me)])));
                   MPI_Request r;
                   MPI_Ireduce_scatter(d, mine.data(), counts.data(), MPI_FLOAT, MPI_SUM, world, &r);
                   MPI_Wait(&r, MPI_STATUS_IGNORE);
                   std::memcpy(d + displs[std::size_t(me)], mine.data(), sizeof(float) * std::size_t(counts[std::size_t(me)]));
                   MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d, counts.data(), displs.data(), MPI_FLOAT, world, &r);
                   MPI_Wait(&r, MPI_STATUS_IGNORE);
                 }));
  out.push_back(variant("  diag: Reduce_scatter+Allgatherv (blocking)", false, [world, split](float* d, std::size_t n) {
                   int me = 0;
                   MPI_Comm_rank(world, &me);
                   std::vector<int> counts, displs;
                   split(n, counts, displs);
                   std::vector<float> mine(std::size_t(std::max(1, counts[std::size_t(me)])));
                   MPI_Reduce_scatter(d, mine.data(), counts.data(), MPI_FLOAT, MPI_SUM, world);
                   std::memcpy(d + displs[std::size_t(me)], mine.data(), sizeof(float) * std::size_t(counts[std::size_t(me)]));
                   MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d, counts.data(), displs.data(), MPI_FLOAT, world);
                 }));
  // The link's two message patterns by hand (2 processes), MPI_Waitall instead of its polling.
  auto scratch = std::make_shared<std::vector<float>>();
  out.push_back(variant("  diag: p2p swap whole buffers, Waitall", false, [world, scratch](float* d, std::size_t n) {
                   int me = 0, size = 1;
                   MPI_Comm_rank(world, &me);
                   MPI_Comm_size(world, &size);
                   if (size != 2) return;
                   scratch->resize(n);
                   MPI_Request r[2];
                   MPI_Irecv(scratch->data(), int(n), MPI_FLOAT, 1 - me, 90, world, &r[0]);
                   MPI_Isend(d, int(n), MPI_FLOAT, 1 - me, 90, world, &r[1]);
                   MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
                   for (std::size_t i = 0; i < n; ++i) d[i] += (*scratch)[i];
                 }));
  out.push_back(variant("  diag: p2p halves, two rounds, Waitall", false, [world, scratch](float* d, std::size_t n) {
                   int me = 0, size = 1;
                   MPI_Comm_rank(world, &me);
                   MPI_Comm_size(world, &size);
                   if (size != 2) return;
                   const std::size_t half = (n + 1) / 2, b[3] = {0, half, n};
                   const int peer = 1 - me;
                   scratch->resize(half);
                   MPI_Request r[2];
                   MPI_Irecv(scratch->data(), int(b[me + 1] - b[me]), MPI_FLOAT, peer, 91, world, &r[0]);
                   MPI_Isend(d + b[peer], int(b[peer + 1] - b[peer]), MPI_FLOAT, peer, 91, world, &r[1]);
                   MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
                   for (std::size_t i = b[me]; i < b[me + 1]; ++i) d[i] += (*scratch)[i - b[me]];
                   MPI_Irecv(d + b[peer], int(b[peer + 1] - b[peer]), MPI_FLOAT, peer, 92, world, &r[0]);
                   MPI_Isend(d + b[me], int(b[me + 1] - b[me]), MPI_FLOAT, peer, 92, world, &r[1]);
                   MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
                 }));
  out.push_back(variant("  diag: MPI_Iallreduce + MPI_Wait", false, [world](float* d, std::size_t n) {
                   MPI_Request r;
                   MPI_Iallreduce(MPI_IN_PLACE, d, int(n), MPI_FLOAT, MPI_SUM, world, &r);
                   MPI_Wait(&r, MPI_STATUS_IGNORE);
                 }));
  return out;
}

// Process 0's table: per variant the median exchange time (last end - last start) and, for the
// link, the median of its own exchange time (the slowest rank's).
bool report(std::vector<Variant>& vs, int ranks, const std::vector<std::string>& hosts, const Options& o, int rank) {
  bool all_exact = true;
  std::vector<std::pair<double, double>> rows;   // exchange, link's own
  for (auto& v : vs) {
    const auto starts = gather(v.start, ranks), ends = gather(v.end, ranks), own = gather(v.own, ranks);
    int exact = v.exact ? 1 : 0, all = 0;
    MPI_Reduce(&exact, &all, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
    all_exact = all_exact && (rank != 0 || all == 1);
    if (rank != 0) continue;
    std::vector<double> exchange, linked;
    const std::size_t n = v.start.size();
    for (std::size_t i = 0; i < n; ++i) {
      double last_start = 0, last_end = 0, own_max = 0;
      for (int r = 0; r < ranks; ++r) {
        last_start = std::max(last_start, starts[std::size_t(r) * n + i]);
        last_end = std::max(last_end, ends[std::size_t(r) * n + i]);
        if (v.link) own_max = std::max(own_max, own[std::size_t(r) * n + i]);
      }
      exchange.push_back(last_end - last_start);
      linked.push_back(own_max);
    }
    rows.push_back({median(exchange), v.link ? median(linked) : 0.0});
    if (all != 1) std::printf("WRONG SUM in %s\n", v.name.c_str());
  }
  if (rank != 0) return all_exact;
  std::string where;
  for (const auto& h : hosts) where += (where.empty() ? "" : ", ") + h;
  const char* btl = std::getenv("OMPI_MCA_btl");
  const double bytes = double(o.count) * sizeof(float);
  std::printf("MPI all-reduce of %zu floats (%.0f bytes), %d processes on %s, btl %s; median of %d, variants "
              "alternating\n", o.count, bytes, ranks, where.c_str(), btl ? btl : "(Open MPI's choice)", o.iters);
  std::printf("exchange: last rank's end - last rank's start (waiting excluded); link's own: its transfer time "
              "(run records), slowest rank\n\n");
  std::printf("%-46s %11s %11s %11s %11s %9s\n", "variant", "exchange_us", "algbw_GB/s", "busbw_GB/s",
              "link_own_us", "vs_MPI");
  double anchor = 0, late_anchor = 0;
  for (std::size_t k = 0; k < vs.size(); ++k) {
    const Variant& v = vs[k];
    const auto [t, own] = rows[k];
    const AllReduceBandwidth bw = all_reduce_bandwidth(bytes, t, ranks);
    if (k == 0) anchor = t;
    if (v.late && !v.link && late_anchor == 0) late_anchor = t;
    const double ref = v.late ? late_anchor : anchor;
    const std::string own_text = v.link ? fmt::format("{:.1f}", own * 1e6) : "";
    std::printf("%-46s %11.1f %11.2f %11.2f %11s %8.2fx\n", v.name.c_str(), t * 1e6, bw.algbw_gbs, bw.busbw_gbs,
                own_text.c_str(), ref > 0 ? t / ref : 0.0);
  }
  return all_exact;
}

}  // namespace

int run_mpi_bench(int argc, char** argv) {
  Options o;
  if (parse(argc, argv, o) != 0) {
    std::fprintf(stderr, "usage: mpirun -np N allreduce_bench [--iters 200] [--late-ms 5] [--count N] [--diagnose]\n");
    return 2;
  }
  auto session = start_mpi_session(detect_launch(), 60);
  const int rank = session->info().process, ranks = session->info().processes;
  // One replica per process: the communicator the trainer gives `mpirun ... --devices cpu:1`.
  auto comms = make_process_communicators(1, session->link());
  Communicator& link = *comms.front();
  MPI_Comm world = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &world);

  char host[64] = {};
  gethostname(host, sizeof host - 1);
  std::vector<char> hosts_raw(sizeof host * std::size_t(ranks));
  MPI_Allgather(host, sizeof host, MPI_CHAR, hosts_raw.data(), sizeof host, MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> hosts;
  for (int r = 0; r < ranks; ++r) hosts.emplace_back(hosts_raw.data() + sizeof host * std::size_t(r));

  auto vs = variants(link, *session->link(), world, o);
  std::vector<float> buf(o.count);
  for (int it = -3; it < o.iters; ++it) {   // three untimed rounds first
    for (std::size_t k = 0; k < vs.size(); ++k) {
      // Alternate the order within a round so that no variant always runs first.
      Variant& v = vs[(it & 1) ? vs.size() - 1 - k : k];
      time_round(v, buf, rank, ranks, o, it >= 0);
      const CollectiveTimes t = link.take_times();
      if (v.link && it >= 0) v.own.push_back(t.transfer_s);
    }
  }
  const bool exact = report(vs, ranks, hosts, o, rank);
  MPI_Comm_free(&world);
  comms.clear();
  return exact ? 0 : 1;
}
#endif

}  // namespace mb::bench
