// The op-consistency check (ggml's test-backend-ops, llm.c's test_gpt2): every available fast
// engine runs the same batches from the same random parameters as the reference engine, and
// each result (loss, hits, every gradient tensor, Adam, evaluation) is compared with a stated
// tolerance. A plain function returning rows: the CLI prints them, the tests assert on them.
#pragma once
#include "config/engine_options.h"
#include "model/model_spec.h"
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace mb {

// One comparison. The rule, per element, is llm.c's |x - ref| <= atol + rtol * |ref|, written
// as a relative error whose denominator is floored at atol/rtol:
//   max_rel_err = max |x - ref| / (|ref| + abs_floor)  with abs_floor = atol / rtol,
//   pass        = max_rel_err <= tol                    with tol = rtol,
// so values far below abs_floor are judged absolutely, larger ones relatively.
struct SelftestCase {
  std::string backend;         // "onednn", "cuda", "reference"
  std::string device;          // "cpu", "cuda:0"
  std::string what;            // "batch 37: grad conv2.weight", "evaluate val: loss sum", ...
  double max_abs_err = 0.0;    // max |x - ref|
  double max_rel_err = 0.0;    // see above
  double tol = 0.0;            // rtol
  double abs_floor = 0.0;      // atol / rtol
  bool pass = false;
  std::string note;            // extra detail for failures (e.g. an exception's message)
};

struct SelftestOptions {
  // What to check: "onednn", "reference", "cuda" (every GPU) or "cuda:N". Empty: every engine
  // this build and machine offer (selftest_targets()).
  std::vector<std::string> targets;
  std::vector<int> batches = {1, 37, 128};   // forward/backward batch sizes (also the engines' max)
  std::filesystem::path data_dir;            // MNIST-layout folder; empty: synthetic images in memory
  uint64_t seed = 1;
  int cpu_threads = 1;                       // intra-replica threads of the oneDNN engine
  ModelSpec model;                           // every engine and the reference train this model
  EngineOptions engine;                      // the engines' kernel choices (--cpu-conv2, --cuda-path, ...)
};

// The default targets: "onednn", then "cuda:I" for every GPU query_devices() lists.
std::vector<std::string> selftest_targets();

// Runs every check; never throws for a failing backend (the failure is a row with pass false
// and the message in `note`). Throws ConfigError for an unknown target name, DataError for
// unreadable data.
std::vector<SelftestCase> run_selftest(const SelftestOptions& options = {});

}  // namespace mb
