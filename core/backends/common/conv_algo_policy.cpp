// Candidate filtering and the collective algorithm choice (see conv_algo_policy.h).
#include "backends/common/conv_algo_policy.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "util/error.h"

namespace mb {

std::string to_string(MathKind m) {
  switch (m) {
    case MathKind::Default: return "default";
    case MathKind::Fma: return "fma";
    case MathKind::TensorOp: return "tensor-op";
    case MathKind::TensorOpAllowConversion: return "tensor-op-allow-conversion";
  }
  return "unknown";
}

bool math_allowed(Precision precision, MathKind math) {
  if (precision == Precision::Tf32) return true;
  return math == MathKind::Default || math == MathKind::Fma;
}

std::vector<AlgoInfo> allowed_candidates(std::span<const AlgoInfo> ranking, Precision precision,
                                         std::size_t max_workspace, bool allow_nondeterministic) {
  std::vector<AlgoInfo> out;
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1 && !allow_nondeterministic) break;
    for (const AlgoInfo& a : ranking) {
      if (!a.supported || !math_allowed(precision, a.math) || a.workspace_bytes > max_workspace) continue;
      if (a.algo < 0 || a.algo >= kMaxConvAlgos) continue;
      if (a.deterministic != (pass == 0)) continue;
      bool seen = false;  // the heuristic lists an algorithm once per math type it may use
      for (const AlgoInfo& o : out) seen = seen || o.algo == a.algo;
      if (!seen) out.push_back(a);
    }
  }
  return out;
}

PassTimings::PassTimings() {
  us.fill(std::numeric_limits<float>::infinity());
  rank_order.fill(-1);
}

namespace {

bool candidate(const PassTimings& t, int a) { return !std::isinf(t.us[std::size_t(a)]); }
bool measured(const PassTimings& t, int a) { return std::isfinite(t.us[std::size_t(a)]); }

AgreedAlgo choose_pass(const std::vector<const PassTimings*>& ranks, std::size_t pass) {
  std::vector<int> common;
  for (int a = 0; a < kMaxConvAlgos; ++a) {
    bool everywhere = true;
    for (const PassTimings* t : ranks) everywhere = everywhere && candidate(*t, a);
    if (everywhere) common.push_back(a);
  }
  MB_CHECK(!common.empty(), DeviceError,
           "no convolution algorithm is usable on every replica for pass {} (the replicas' GPUs or batch shares "
           "differ too much)",
           pass);
  const PassTimings& first = *ranks.front();
  auto order = [&](int a) {
    return first.rank_order[std::size_t(a)] < 0 ? kMaxConvAlgos : first.rank_order[std::size_t(a)];
  };
  AgreedAlgo best;
  for (int a : common) {
    bool all_measured = true;
    float worst = 0;
    for (const PassTimings* t : ranks) {
      all_measured = all_measured && measured(*t, a);
      if (measured(*t, a)) worst = std::max(worst, t->us[std::size_t(a)]);
    }
    if (!all_measured) continue;
    const bool better =
        !best.measured || worst < best.worst_us ||
        (worst == best.worst_us && (order(a) < order(best.algo) || (order(a) == order(best.algo) && a < best.algo)));
    if (better) best = AgreedAlgo{a, true, worst};
  }
  if (best.measured) return best;
  // Nothing measured everywhere (deadline): the first common candidate in rank 0's ranking.
  int pick = common.front();
  for (int a : common)
    if (order(a) < order(pick)) pick = a;
  return AgreedAlgo{pick, false, -1};
}

}  // namespace

std::vector<AgreedAlgo> choose_algorithms(const std::vector<std::vector<PassTimings>>& all) {
  const std::size_t passes = all.empty() ? 0 : all.front().size();
  std::vector<AgreedAlgo> out(passes);
  for (std::size_t p = 0; p < passes; ++p) {
    std::vector<const PassTimings*> ranks;
    for (const auto& r : all)
      if (r.at(p).participates) ranks.push_back(&r[p]);
    if (!ranks.empty()) out[p] = choose_pass(ranks, p);
  }
  return out;
}

std::vector<AgreedAlgo> agree_on_algorithms(std::span<const PassTimings> mine, Communicator& comm) {
  const std::size_t passes = mine.size();
  std::vector<PassTimings> gathered(passes * std::size_t(comm.size()));
  comm.all_gather_bytes(mine.data(), passes * sizeof(PassTimings), gathered.data());
  std::vector<std::vector<PassTimings>> all(std::size_t(comm.size()));
  for (std::size_t r = 0; r < all.size(); ++r)
    all[r].assign(gathered.begin() + std::ptrdiff_t(r * passes), gathered.begin() + std::ptrdiff_t((r + 1) * passes));
  return choose_algorithms(all);
}

}  // namespace mb
