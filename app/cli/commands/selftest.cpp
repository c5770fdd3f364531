// `mirrorbench-cli selftest`: runs the op-consistency check on every engine this build and
// machine offer and prints one line per comparison; for GPU machines after installation.
#include <fmt/format.h>

#include "backends/devices.h"
#include "backends/selftest.h"
#include "cli_options.h"
#include "options/train_flags.h"

namespace mb::cli {
namespace {

void add_selftest_options(CLI::App& sub, Options& o) {
  options::add_train_flags(sub, o.train,
                           {{"model", "check every backend on this model: reference or dense:N"},
                            {"cpu_conv2"}, {"onednn_isa"}, {"simd_target"}, {"cuda_path"}, {"cudnn_tune"}});
}

int run_selftest_command(const Options& o) {   // 0 when every check passes, 1 on any mismatch
  const auto targets = selftest_targets();
  fmt::print("selftest: {} against the reference engine, model {}\n", fmt::join(targets, ", "), o.train.model.name());
  SelftestOptions opt;
  opt.model = o.train.model;
  opt.engine = o.train.engine;
  apply_process_kernel_options(o.train.engine);
  const auto cases = run_selftest(opt);
  int failed = 0;
  for (const auto& c : cases) {
    if (!c.pass) ++failed;
    fmt::print("{:4} {:9} {:7} {:44} max_abs {:9.3g}  max_rel {:9.3g}  tol {:.0e}{}{}\n", c.pass ? "ok" : "FAIL",
               c.backend, c.device, c.what, c.max_abs_err, c.max_rel_err, c.tol, c.note.empty() ? "" : "  ", c.note);
  }
  fmt::print("{} passed, {} failed\n", cases.size() - failed, failed);
  return failed == 0 ? 0 : 1;
}

[[maybe_unused]] const bool registered = register_command(
    {"selftest", "check every available backend against the reference", 30, add_selftest_options,
     run_selftest_command});

}  // namespace
}  // namespace mb::cli
