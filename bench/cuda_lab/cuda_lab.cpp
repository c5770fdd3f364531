// The CUDA kernel lab (llm.c dev/cuda practice): every own kernel of the training step, every
// cuDNN call (every allowed algorithm validated, the one the engine's rule picks timed) and
// every cuBLAS call, on the real shapes (batch 64 and 128) and small ones, each validated
// against the CPU (lab_cases.h: the reference layers, the fused emulator; the tolerance
// printed with any failure), then timed with CUDA events: microseconds, GFLOP/s, GB/s and the
// larger share of the H200's peaks; and whole training steps of both paths side by side.
//
// Five parts, in this order, each batch of each in its own try (an exception ends that part
// at that batch, shown as an ERROR line, and the lab goes on), each with its own summary
// line: the own kernels, the fused kernels (the most valuable, least likely to throw), the
// library calls in FP32 and in TF32, then whole steps through the engine (NCCL, capture).
// Exit status 1 when any check failed or any part was stopped by an error.
//
// Usage: cuda_lab [--quick] [--no-steps] [--batches 1,3,64,128] [--reps N] [--steps N] [--cudnn-tune S]
//                 [--json FILE]
//   --quick: batches 3 and 64, 5 timed launches, 50 steps
//   --cudnn-tune: the run option of that name, for the engine's warm-up in the step part
//   --no-steps: kernels and library calls only (no engine): what compute-sanitizer runs,
//   with --quick
// Built with the CUDA backend (bench/CMakeLists.txt); bench/gpu_check.sh runs it first.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "backends/cuda/cuda_backend.h"
#include "config/train_options.h"
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

// A part of the lab: its name (the summary line's), its group (an error's) and how it runs
// one batch.
struct Part {
  const char* name;
  Group group;
  std::function<std::vector<Result>(const CudnnStages&, cudaStream_t)> run;
};

std::vector<Part> lab_parts(const LabOptions& o, bool steps) {
  std::vector<Part> parts = {
      {"own kernels", Group::OwnKernel, [&o](const CudnnStages& s, cudaStream_t st) { return run_own_kernels(s, o, st); }},
      {"fused kernels", Group::Fused, [&o](const CudnnStages& s, cudaStream_t st) { return run_fused_kernels(s, o, st); }},
      {"cuDNN and cuBLAS, fp32", Group::Cudnn,
       [&o](const CudnnStages& s, cudaStream_t st) { return run_library_calls(s, o, Precision::Fp32, st); }},
      {"cuDNN and cuBLAS, tf32", Group::Cudnn,
       [&o](const CudnnStages& s, cudaStream_t st) { return run_library_calls(s, o, Precision::Tf32, st); }},
  };
  if (steps)
    parts.push_back({"train steps", Group::Step, [&o](const CudnnStages& s, cudaStream_t) { return run_steps(s, o); }});
  return parts;
}

// Every part over every batch; the stages (CPU) are computed once per batch. Returns the
// summary lines' counts, the results in `all`.
std::vector<PartSummary> run_parts(const std::vector<Part>& parts, const LabOptions& o, cudaStream_t stream,
                                   std::vector<Result>& all) {
  std::map<int, CudnnStages> stages;
  std::vector<PartSummary> summaries;
  for (const Part& part : parts) {
    std::vector<Result> mine;
    for (int n : o.batches) {
      std::vector<Result> batch;
      try {
        if (!stages.count(n)) stages.emplace(n, make_cudnn_stages(n, 2026));
        batch = part.run(stages.at(n), stream);
      } catch (const std::exception& e) {
        batch.push_back(error_result(part.group, n, part.name, e.what()));
      }
      std::printf("\n== %s, batch %d\n%s", part.name, n, format_table(batch).c_str());
      std::fflush(stdout);
      mine.insert(mine.end(), batch.begin(), batch.end());
    }
    summaries.push_back(summarize_part(part.name, mine));
    std::printf("cuda_lab: %s\n", format_summary(summaries.back()).c_str());
    all.insert(all.end(), mine.begin(), mine.end());
  }
  return summaries;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "cuda_lab: %s\nusage: cuda_lab [--quick] [--no-steps] [--batches 1,3,64,128] [--reps N] [--steps N] "
               "[--cudnn-tune S] [--json FILE]\n",
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
    } else if (a == "--cudnn-tune" && has_value) {
      TrainConfig c;   // read by the run option's own row: its range and its message
      try {
        set_option(train_option("cudnn_tune"), c, argv[++i]);
      } catch (const ConfigError& e) {
        return usage(e.what());
      }
      o.tune_s = c.engine.cudnn_tune_s;
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
  std::vector<PartSummary> summaries;
  bool error = false;
  try {
    cuda::Stream stream = cuda::make_stream();
    summaries = run_parts(lab_parts(o, steps), o, stream.get(), all);
  } catch (const std::exception& e) {  // the lab's own stream: nothing could run
    std::printf("cuda_lab: FAILED with an error: %s\n", e.what());
    error = true;
  }
  std::printf("\n");
  for (const PartSummary& p : summaries) {
    std::printf("cuda_lab: %s\n", format_summary(p).c_str());
    error = error || !p.clean();
  }
  const PartSummary total = summarize_part("cuda_lab", all);
  std::printf("%s\n", format_summary(total).c_str());
  if (!json.empty()) std::ofstream(json) << to_json(all);
  return error ? 1 : 0;
}
