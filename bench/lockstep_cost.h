// What lock-step synchronisation costs a CPU training step beyond the real waiting.
#pragma once
#include <vector>

namespace mb::bench {

// Prints the table (see lockstep_cost.cpp) for each replica count; returns 0, or 1 when a
// sum came out wrong.
int run_lockstep_cost(const std::vector<int>& replica_counts, int repeats);

}  // namespace mb::bench
