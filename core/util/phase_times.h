// Where one replica's training time went, summed over steps, by category. The categories are
// one table (phase_times.cpp), in the order a replica runs them: forward, backward, waiting for
// the slowest replica, the gradient all-reduce's exposed exchange, the optimizer - the parts of
// a step, which add up to it (up to timer gaps) - and, beside them, measures over the same steps
// that are not parts of them (the replica thread's CPU time while it computed, the exchange
// hidden under the backward pass); then waiting for input, a part of the step again, last
// because it came last (its place in the table is its place in records' columns). The record, its
// CSV, the Chrome trace, the live progress and "Where the time goes" list every row, so a new
// category is a row here plus the code that measures it.
//
// Engines that compute forward and backward in one pass (the reference loops) report both as
// backward. The CUDA engine does not time phases per step (that would stop the GPU running
// ahead): it reports only the all-reduce, each step's exposed communication as measured in its
// warm-up (CommProfile).
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace mb {

// How a category relates to the step.
enum class TimeRole {
  Compute,         // the replica computing (the breakdown stacks these as one "compute")
  Communication,   // exchanging the gradient
  Waiting,         // idle, for the slowest replica
  Input,           // idle, for the input pipeline's next batch
  Beside,          // measured over the same steps but not a part of them: never stacked
};

// The colour a category takes in the window (ui/insight maps each role to a colour).
enum class ColourRole { ComputeLight, Compute, ComputeDark, Communication, Waiting, Input, CpuTime, Extra };

struct TimeCategory {
  std::string_view key;      // "forward": the record's "forward_s", the CSV's "breakdown_forward_s"
  std::string_view label;    // "forward": the Chrome trace's event name, the timeline's legend
  std::string_view legend;   // "communication (all-reduce)": the breakdown's legend
  std::string_view help;     // one sentence for tooltips
  std::string_view unit;     // "s" (wall time) or "CPU s"
  TimeRole role = TimeRole::Compute;
  ColourRole colour = ColourRole::Extra;
  int since_schema = 1;      // the run record schema that added it (older records may lack it)
};

inline constexpr int kMaxTimeCategories = 12;

// The built-in categories' positions in the table.
namespace phase {
enum : int { Forward, Backward, Wait, AllReduce, Optimizer, ComputeCpu, HiddenAllReduce, InputWait, kBuiltins };
}  // namespace phase

// Every category, built-in ones first, in step order.
std::span<const TimeCategory> time_categories();
// Adds a category after the others and returns its position: for tests, and for code that
// measures something before it earns a row of its own. Throws std::logic_error when the table
// is full or the key taken. Call before any run (the table is not guarded).
int add_time_category(const TimeCategory& category);
int time_category(std::string_view key);   // position of the key, or -1
// Every category's position in the order a step runs them: waiting for input first (before
// the forward pass, whatever its place in the table), then the table's order. The Chrome trace
// and the window's timeline lay a step's parts out in it.
std::vector<int> step_order();

// Seconds per category (trivially copyable: all-gathered between replicas as bytes).
struct PhaseTimes {
  std::array<double, kMaxTimeCategories> s{};

  double& operator[](int category) { return s[std::size_t(category)]; }
  double operator[](int category) const { return s[std::size_t(category)]; }
  double of(TimeRole role) const;                       // summed over the categories of a role
  double compute_s() const { return of(TimeRole::Compute); }
  double total() const;                                 // the step: every category but the Beside ones
  PhaseTimes& operator+=(const PhaseTimes& o) {
    for (std::size_t i = 0; i < s.size(); ++i) s[i] += o.s[i];
    return *this;
  }
  friend PhaseTimes operator-(PhaseTimes a, const PhaseTimes& b) {
    for (std::size_t i = 0; i < a.s.size(); ++i) a.s[i] -= b.s[i];
    return a;
  }
  PhaseTimes scaled(double factor) const {
    PhaseTimes out = *this;
    for (double& x : out.s) x *= factor;
    return out;
  }
};

// CPU seconds the calling thread has run so far (CLOCK_THREAD_CPUTIME_ID): the gap to the wall
// clock over a stretch of work is the time the thread was ready but had no CPU.
double thread_cpu_seconds();

// The gradient all-reduce as nccl-tests and DDP's profiling see it, measured once in an
// engine's untimed warm-up (empty for a single replica or a host communicator):
//   exposed = (step with communication) - (the same step without it), per step: what the
//   communication adds to a step after overlapping with backward;
//   algbw = bytes / time of the bare all-reduce of the whole gradient, busbw = algbw x 2(n-1)/n.
struct CommProfile {
  int replicas = 0;                // 0: not measured
  int64_t bytes = 0;               // the gradient buffer
  int buckets = 0;                 // all-reduce calls per step
  double allreduce_s = 0;          // one bare all-reduce of `bytes`
  double algbw_gbs = 0, busbw_gbs = 0;   // GB/s (1e9 bytes per second)
  double step_s = 0;               // a training step with its all-reduces
  double step_no_comm_s = 0;       // the same step without them
  double exposed_s = 0;            // max(0, step_s - step_no_comm_s)
  bool measured() const { return replicas > 0; }
};

}  // namespace mb
