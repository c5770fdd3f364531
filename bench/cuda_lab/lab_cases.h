// The CUDA kernel lab's CPU half (llm.c dev/cuda practice): for one batch, every stage of the
// training step computed on the CPU from the same inputs the GPU gets (the reference layers
// for the cudnn path's kernels and library calls, the fused emulator for the fused kernels),
// the tolerance each comparison is held to and why, the work of each case (FLOPs, bytes),
// the H200's peaks, the comparison, the validate-then-time order every device case goes
// through, and the report (a line per case, one summary line per part of the lab). GPU-free:
// tests/test_cuda_lab.cpp checks it here; bench/cuda_lab/cuda_lab.cpp runs it against the
// device.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "config/precision.h"
#include "backends/fused/fused_emulator.h"
#include "data/dataset.h"

namespace mb::lab {

// One H200 SXM (NVIDIA's data sheet): HBM3e bandwidth, dense FP32 and dense TF32 tensor peaks.
struct Peak {
  const char* name = "H200 SXM";
  double mem_gbs = 4800;
  double fp32_tflops = 67;
  double tf32_tflops = 494.7;
};

enum class Group { OwnKernel, Cudnn, Cublas, Fused, Step };
const char* to_string(Group g);

// |x - ref| <= atol_scale * max|ref over the tensor| + rtol * |ref|, per element; exact
// comparisons have both zero. `why` says where the allowed difference comes from.
struct CaseTolerance {
  double atol_scale = 0, rtol = 0;
  const char* why = "";
};

// Every case the lab runs, with its tolerance and its work at batch n.
struct CaseSpec {
  std::string name;
  Group group = Group::OwnKernel;
  CaseTolerance tol;
  double flops = 0;          // per launch
  double bytes = 0;          // per launch: each input read and each output written once
  bool tensor_math = false;  // TF32 tensor cores (the share is of that peak)
};
std::vector<CaseSpec> lab_cases(int n, Precision precision);
const CaseSpec& find_case(const std::vector<CaseSpec>& cases, const std::string& name);  // throws

// The shapes: the real ones (64, 128: the per-replica shares of the reference batch on 2 and
// 1 replicas) and small ones that exercise partial tiles and single samples.
std::vector<int> lab_batches(bool quick);

// Every stage of the cudnn path's step at batch n, each computed by the reference layers
// from the previous stage's reference output (a kernel is checked alone, on exact inputs).
struct CudnnStages {
  int n = 0;
  float grad_scale = 0;
  Dataset data;  // the samples the indices point into
  std::vector<int32_t> idx;
  std::vector<float> params;    // Glorot weights, nonzero biases, tied conv1 channels
  std::vector<float> x;         // gather: [n][784]
  std::vector<int32_t> labels;  // gathered labels
  std::vector<float> c1, p1;    // conv1 (no bias), bias + ReLU + pool
  std::vector<uint8_t> a1;
  std::vector<float> c2, p2;
  std::vector<uint8_t> a2;
  std::vector<float> h_gemm, h;  // fc1 GEMM, then bias + ReLU
  std::vector<float> logits;     // fc2 GEMM (the softmax kernel adds the bias)
  double loss_sum = 0, correct = 0;
  std::vector<float> dlogits;                  // (softmax - onehot) * grad_scale
  std::vector<float> g_fc2b, g_fc2w, dh_gemm;  // bias, weight gradient, input gradient GEMM
  std::vector<float> dh, g_fc1b;               // ReLU mask applied, bias gradient
  std::vector<float> g_fc1w, dp2;
  std::vector<float> dc2, g_conv2b;  // pool + ReLU + bias backward
  std::vector<float> g_conv2w, dp1;  // conv2 weight and input gradients
  std::vector<float> dc1, g_conv1b;
  std::vector<float> g_conv1w;
  std::vector<float> grads() const;  // the stages' gradients as the flat buffer
};
CudnnStages make_cudnn_stages(int n, uint64_t seed);

// The fused path's state (activations, parameters, gradients, statistics) before and after
// each kernel, stepped on the host by the emulator.
struct FusedState {
  FusedState(const CudnnStages& s);  // the same samples and parameters
  FusedState(const FusedState& o);
  FusedState& operator=(const FusedState&) = delete;
  fused::FusedArgs args();  // over this state's buffers
  int n;
  float grad_scale;
  const Dataset* data;
  std::vector<int32_t> step_idx;
  std::vector<float> params, grads;
  double stats[2] = {0, 0};
  fused::HostActivations acts;
};
// What a fused kernel writes: its float outputs by name (the statistics as floats), its byte
// outputs (argmax) and integer outputs (the copied indices).
struct NamedFloats {
  std::string name;
  std::vector<float> values;
};
std::vector<NamedFloats> fused_float_outputs(fused::FusedKernel k, const FusedState& s);
std::vector<std::span<const uint8_t>> fused_byte_outputs(fused::FusedKernel k, const FusedState& s);
std::vector<std::span<const int32_t>> fused_int_outputs(fused::FusedKernel k, const FusedState& s);

// The comparison of one output.
struct Comparison {
  bool passed = false;
  double worst_ratio = 0;  // of the allowed difference, at the worst element
  std::size_t worst_index = 0;
  double got = 0, want = 0;
  std::size_t mismatches = 0;  // elements beyond the tolerance (bytes: unequal)
};
Comparison compare(std::span<const float> got, std::span<const float> want, const CaseTolerance& tol);
Comparison compare_bytes(std::span<const uint8_t> got, std::span<const uint8_t> want, std::size_t allowed);
Comparison compare_ints(std::span<const int32_t> got, std::span<const int32_t> want);

// One line of the lab's report: a case, or an exception that ended a part of the lab.
struct Result {
  std::string name;
  Group group = Group::OwnKernel;
  int n = 0;
  bool validated = false, passed = false;
  bool error = false;                          // an exception, not a case (validated, not passed)
  std::string detail;                          // the worst element, or why it failed
  double time_us = -1;                         // median of the timed launches; -1: not timed
  double gflops = 0, gbs = 0, peak_share = 0;  // achieved, and the larger share of a peak
};
// Fills gflops, gbs and peak_share from the case's work and time_us.
void add_rates(Result& r, const CaseSpec& c, const Peak& peak);

// A case's comparisons, one per output (or per algorithm): what was compared, and the verdict.
using Checks = std::vector<std::pair<std::string, Comparison>>;

// A validated and timed case: the comparisons' verdict, the median time (-1: not timed) and
// the rates.
Result finish_case(const CaseSpec& spec, int n, const Checks& checks, double us, const Peak& peak);

// Validate, THEN time (llm.c's dev/cuda order), the one way the device cases are finished:
// `validate` reads back the outputs of the launch already made and compares them; only then
// does `time` relaunch it, many times. Kernels that work in place (Adam, ReLU masks, the in-GPU
// all-reduce) or accumulate change their outputs with every relaunch, so the timing must
// never run first, as it may when both are arguments of one call, whose evaluation order C++
// leaves open (g++ 12 timed Adam 22 times before validating it: a false failure, issue 30).
Result validate_then_time(const CaseSpec& spec, int n, const std::function<Checks()>& validate,
                          const std::function<double()>& time, const Peak& peak);

// A part of the lab (own kernels, fused kernels, library calls, training steps) runs batch by
// batch, each batch in its own try: an exception ends that part at that batch (a failed
// Result that says so), never the lab. Its summary line counts its checks and errors.
Result error_result(Group group, int n, const std::string& part, const std::string& what);
struct PartSummary {
  std::string name;
  int checks = 0, failed = 0, errors = 0;  // errors are not counted as checks
  bool clean() const { return failed == 0 && errors == 0; }
};
PartSummary summarize_part(const std::string& name, const std::vector<Result>& results);
std::string format_summary(const PartSummary& s);  // "own kernels: 40 of 40 checks passed"
std::string format_table(const std::vector<Result>& results);  // one aligned line per result
std::string to_json(const std::vector<Result>& results);       // a JSON array

}  // namespace mb::lab
