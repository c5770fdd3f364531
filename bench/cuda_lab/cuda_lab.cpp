// The CUDA kernel lab (llm.c dev/cuda practice): every own kernel of the training step, every
// cuDNN call with the algorithm the engine chose and every cuBLAS call, on the real shapes
// (batch 64 and 128) and small ones, each validated against the CPU (lab_cases.h: the
// reference layers, the fused emulator; the tolerance printed with any failure), then timed
// with CUDA events: microseconds, GFLOP/s, GB/s and the larger share of the H200's peaks;
// and whole training steps of both paths side by side. Exit status 1 when any check failed.
//
// Usage: cuda_lab [--quick] [--no-steps] [--batches 1,3,64,128] [--reps N] [--steps N] [--json FILE]
//   --quick: batches 3 and 64, 5 timed launches, 50 steps
//   --no-steps: kernels and library calls only (no engines; the library calls then use each
//   plan's first candidate): what compute-sanitizer runs, with --quick
// Built with the CUDA backend (bench/CMakeLists.txt); bench/gpu_check.sh runs it first.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "backends/cuda/cuda_backend.h"
#include "lab_device.h"

namespace {

using namespace mb;
using namespace mb::lab;

std::vector<int> parse_list(std::string_view text) {
  std::vector<int> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t comma = text.find(',', at);
    out.push_back(std::stoi(std::string(text.substr(at, comma - at))));
    if (comma == std::string_view::npos) break;
    at = comma + 1;
  }
  return out;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "cuda_lab: %s\nusage: cuda_lab [--quick] [--no-steps] [--batches 1,3,64,128] [--reps N] [--steps N] "
               "[--json FILE]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  LabOptions o;
  o.batches = lab_batches(false);
  std::string json;
  bool steps = true;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--quick") {
      o.batches = lab_batches(true);
      o.reps = 5;
      o.steps = 50;
    } else if (a == "--no-steps") {
      steps = false;
    } else if (a == "--batches" && has_value) {
      o.batches = parse_list(argv[++i]);
    } else if (a == "--reps" && has_value) {
      o.reps = std::atoi(argv[++i]);
    } else if (a == "--steps" && has_value) {
      o.steps = std::atoi(argv[++i]);
    } else if (a == "--json" && has_value) {
      json = argv[++i];
    } else {
      return usage(fmt::format("unknown argument '{}'", a).c_str());
    }
  }
  std::string why;
  const auto gpus = cuda::list_gpus(&why);
  std::printf("cuda_lab: %s\n", cuda::versions().c_str());
  if (gpus.empty()) {
    std::printf("cuda_lab: no GPU (%s): nothing to run; the CPU half is tested by test_cuda_lab\n", why.c_str());
    return 0;
  }
  std::printf("cuda_lab: %s, cc %d.%d; peaks of an %s: %.0f GB/s, %.1f TFLOP/s FP32, %.1f TFLOP/s TF32\n",
              gpus[0].name.c_str(), gpus[0].cc_major, gpus[0].cc_minor, o.peak.name, o.peak.mem_gbs, o.peak.fp32_tflops,
              o.peak.tf32_tflops);
  std::vector<Result> all;
  bool error = false;
  try {
    cuda::Stream stream = cuda::make_stream();
    for (int n : o.batches) {
      const CudnnStages stages = make_cudnn_stages(n, 2026);
      std::vector<ConvChoice> fp32, tf32;
      std::vector<Result> part = steps ? run_steps(stages, o, &fp32, &tf32) : std::vector<Result>{};
      auto append = [&](std::vector<Result> r) { part.insert(part.end(), r.begin(), r.end()); };
      append(run_library_calls(stages, o, Precision::Fp32, fp32, stream.get()));
      append(run_library_calls(stages, o, Precision::Tf32, tf32, stream.get()));
      append(run_own_kernels(stages, o, stream.get()));
      append(run_fused_kernels(stages, o, stream.get()));
      std::printf("\n== batch %d\n%s", n, format_table(part).c_str());
      std::fflush(stdout);
      all.insert(all.end(), part.begin(), part.end());
    }
  } catch (const std::exception& e) {
    std::printf("cuda_lab: FAILED with an error: %s\n", e.what());
    error = true;
  }
  int checks = 0, failed = 0;
  for (const Result& r : all) {
    checks += r.validated;
    failed += r.validated && !r.passed;
  }
  std::printf("\ncuda_lab: %d of %d checks passed%s\n", checks - failed, checks,
              error ? " (then an error stopped it)" : "");
  if (!json.empty()) std::ofstream(json) << to_json(all);
  return failed || error ? 1 : 0;
}
