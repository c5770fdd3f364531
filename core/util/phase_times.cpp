// The table of time categories (see phase_times.h).
#include "util/phase_times.h"

#include <ctime>
#include <stdexcept>
#include <vector>

namespace mb {
namespace {

// The positions are phase::Forward ... phase::InputWait; a new built-in row goes at the end (the
// records' columns keep their places), and its name into phase:: at the same place.
std::vector<TimeCategory> builtin_rows() {
  return {
      {.key = "forward", .label = "forward", .legend = "forward", .help = "the forward pass over the replica's share",
       .unit = "s", .role = TimeRole::Compute, .colour = ColourRole::ComputeLight},
      {.key = "backward", .label = "backward", .legend = "backward",
       .help = "the backward pass: the gradient of the replica's share",
       .unit = "s", .role = TimeRole::Compute, .colour = ColourRole::Compute},
      {.key = "wait", .label = "wait", .legend = "waiting (for the slowest replica)",
       .help = "at the all-reduce, until the slowest replica arrives", .unit = "s", .role = TimeRole::Waiting,
       .colour = ColourRole::Waiting},
      {.key = "allreduce", .label = "all-reduce", .legend = "communication (all-reduce)",
       .help = "the gradient's exchange once every replica has arrived", .unit = "s",
       .role = TimeRole::Communication, .colour = ColourRole::Communication},
      {.key = "optimizer", .label = "optimizer", .legend = "optimizer", .help = "the Adam step on every parameter",
       .unit = "s", .role = TimeRole::Compute, .colour = ColourRole::ComputeDark},
      {.key = "compute_cpu", .label = "compute CPU time", .legend = "CPU time while computing",
       .help = "the CPU time the replica's thread got while it computed (forward, backward, optimizer): less than "
               "their wall time when other threads took its core",
       .unit = "CPU s", .role = TimeRole::Beside, .colour = ColourRole::CpuTime, .since_schema = 5},
      {.key = "hidden_allreduce", .label = "hidden all-reduce", .legend = "communication hidden under backward",
       .help = "wire time of the gradient's buckets that ran while the backward pass still computed (--bucket-mb "
               "over a simulated link): not a part of the step",
       .unit = "s", .role = TimeRole::Beside, .colour = ColourRole::Extra, .since_schema = 7},
      {.key = "input_wait", .label = "waiting for input", .legend = "waiting for input (the input pipeline)",
       .help = "before the forward pass, until the loaders had the replica's next batch ready: loading set the pace",
       .unit = "s", .role = TimeRole::Input, .colour = ColourRole::Input, .since_schema = 8},
  };
}

// Room for every row up front: spans handed out stay valid when a category is added.
std::vector<TimeCategory>& table() {
  static std::vector<TimeCategory> rows = [] {
    std::vector<TimeCategory> r;
    r.reserve(std::size_t(kMaxTimeCategories));
    for (const TimeCategory& c : builtin_rows()) r.push_back(c);
    return r;
  }();
  return rows;
}

}  // namespace

std::span<const TimeCategory> time_categories() { return table(); }

int add_time_category(const TimeCategory& category) {
  std::vector<TimeCategory>& rows = table();
  if (rows.size() >= std::size_t(kMaxTimeCategories)) throw std::logic_error("the time category table is full");
  if (time_category(category.key) >= 0) throw std::logic_error("a time category of that key exists");
  rows.push_back(category);
  return int(rows.size()) - 1;
}

int time_category(std::string_view key) {
  const std::vector<TimeCategory>& rows = table();
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].key == key) return int(i);
  return -1;
}

std::vector<int> step_order() {
  std::vector<int> out;
  const std::vector<TimeCategory>& rows = table();
  for (bool input : {true, false})
    for (std::size_t i = 0; i < rows.size(); ++i)
      if ((rows[i].role == TimeRole::Input) == input) out.push_back(int(i));
  return out;
}

double PhaseTimes::of(TimeRole role) const {
  double sum = 0;
  const auto rows = time_categories();
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].role == role) sum += s[i];
  return sum;
}

double PhaseTimes::total() const {
  double sum = 0;
  const auto rows = time_categories();
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].role != TimeRole::Beside) sum += s[i];
  return sum;
}

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

}  // namespace mb
