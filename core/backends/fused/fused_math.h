// The fused CUDA path's arithmetic, written once for the device and the host: every kernel
// of the fused step (backends/cuda/fused_kernels.cu) is either an ELEMENT kernel (one
// independent work item per thread, run(a, e)) or a REDUCTION kernel (one output tile per
// block; the block's threads split the tile's terms, accumulate(a, tile, term, acc) adds one
// term's contributions, the block sums the threads' partials in a fixed tree and finish()
// writes each output). The CUDA kernels only map threads to items and sum partials; the CPU
// emulator (fused_emulator.h) runs the very same functions in loops, so the fused path's
// indexing and formulas are tested against the reference without a GPU.
//
// The step (reference CNN, NCHW, batch n, the dense width H a run-time value):
//   Conv1Fwd   gather + /255 + conv1 + bias + ReLU + 2x2 max pool -> p1, argmax a1 (and the
//              step's indices copied to a fixed buffer, so only this kernel reads them)
//   Conv2Fwd   conv2 + bias + ReLU + 2x2 max pool (floor: row/column 10 unused) -> p2, a2
//   Fc1Fwd     h = relu(p2 W1^T + b1)                                  (reduction over 1600)
//   Head       logits = h W2^T + b2, softmax cross-entropy (double, the reference's formula),
//              per-sample loss/correct, dlogits = (p - onehot) / global batch, dh = dlogits W2
//              masked by h > 0
//   DenseBwd   dW1 = dh^T p2, dW2/db2 = dlogits^T h, db1 = sum dh    (reductions over n) and
//              g2 = (dh W1) masked by p2 > 0                           (element role)
//   Conv2Wgrad dW2conv, db2conv from g2 through the pool's argmax      (reduction over n x 25)
//   Conv2Dgrad g1 = conv2's input gradient gathered through the argmax, masked by p1 > 0
//   Conv1Wgrad dW1conv, db1conv from g1 through the pool's argmax      (reduction over n x 169)
// The gradient of a max pool flows only through each window's argmax, so the backward
// kernels never form the dense gradient of a convolution output: 4x fewer terms than the
// dense formulation in conv2's weight gradient. Ties: the first maximum in row-major window
// order, as the reference. FP32 arithmetic (FMA contraction on the device), the loss in double.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define MB_HD __host__ __device__ __forceinline__
#else
#define MB_HD inline
#endif

namespace mb::fused {

inline constexpr int kSide = 28, kPixels = 784;
inline constexpr int kC1 = 32, kP1 = 13, kP1Plane = 169;  // conv1 26x26 pooled to 13x13
inline constexpr int kC2 = 64, kP2 = 5, kP2Plane = 25;    // conv2 11x11 pooled to 5x5
inline constexpr int kFlat = kC2 * kP2Plane;              // 1600
inline constexpr int kClasses = 10;

// Everything a fused kernel reads or writes; one pack for all kernels, so a captured graph's
// per-step nodes (Conv1Fwd: step_idx; Head: grad_scale, stats) are updated with one argument.
struct FusedArgs {
  int n = 0, hidden = 0;
  // per step
  const int32_t* step_idx = nullptr;  // the step's sample indices (read by Conv1Fwd only)
  float grad_scale = 1.0f;            // 1 / global batch (Head)
  double* stats = nullptr;            // += loss sum, correct count (Head)
  // data
  const uint8_t* pixels = nullptr;  // [samples][784]
  const uint8_t* labels = nullptr;
  // parameters and gradients (cnn_spec layout: conv OIHW, dense [out, in])
  const float *w1 = nullptr, *b1 = nullptr, *w2 = nullptr, *b2 = nullptr;
  const float *fw1 = nullptr, *fb1 = nullptr, *fw2 = nullptr, *fb2 = nullptr;
  float *gw1 = nullptr, *gb1 = nullptr, *gw2 = nullptr, *gb2 = nullptr;
  float *gfw1 = nullptr, *gfb1 = nullptr, *gfw2 = nullptr, *gfb2 = nullptr;
  // activations, [n][...]
  int32_t* idx = nullptr;  // the step's indices, copied by Conv1Fwd
  float* p1 = nullptr;     // [n][32][13][13]
  uint8_t* a1 = nullptr;
  float* p2 = nullptr;  // [n][1600] (= flatten's C,H,W order)
  uint8_t* a2 = nullptr;
  float* h = nullptr;              // [n][H]
  float* dlogits = nullptr;        // [n][10]; nullptr: forward only (evaluation)
  float* dh = nullptr;             // [n][H]
  float* g2 = nullptr;             // [n][1600]: dL/dp2 where p2 > 0, else 0
  float* g1 = nullptr;             // [n][32][13][13]: dL/dp1 where p1 > 0, else 0
  double* sample_stats = nullptr;  // [n][2]: loss, correct
  unsigned* counter = nullptr;     // the device's cross-block sum of Head (zero, left zero)
};

// The fused step's kernels, in launch order.
enum class FusedKernel {
  Conv1Fwd,    // gather + conv1 + bias + ReLU + pool        (the step's Input node)
  Conv2Fwd,    // conv2 + bias + ReLU + pool
  Fc1Fwd,      // fc1 + bias + ReLU
  Head,        // fc2, softmax cross-entropy, dlogits, dh     (the step's Loss node)
  DenseBwd,    // fc1/fc2 weight and bias gradients, g2
  Conv2Wgrad,  // conv2 weight and bias gradients
  Conv2Dgrad,  // conv2 input gradient -> g1
  Conv1Wgrad,  // conv1 weight and bias gradients
};
inline constexpr int kFusedKernels = 8;
inline constexpr int kFusedForwardKernels = 4;  // evaluation runs the first four
inline const char* fused_kernel_name(FusedKernel k) {
  switch (k) {
    case FusedKernel::Conv1Fwd: return "fused conv1 forward (gather, bias, ReLU, pool)";
    case FusedKernel::Conv2Fwd: return "fused conv2 forward (bias, ReLU, pool)";
    case FusedKernel::Fc1Fwd: return "fused fc1 forward (bias, ReLU)";
    case FusedKernel::Head: return "fused head (fc2, softmax cross-entropy, dlogits, dh)";
    case FusedKernel::DenseBwd: return "fused dense backward (fc1/fc2 gradients, g2)";
    case FusedKernel::Conv2Wgrad: return "fused conv2 weight gradient";
    case FusedKernel::Conv2Dgrad: return "fused conv2 input gradient (g1)";
    case FusedKernel::Conv1Wgrad: return "fused conv1 weight gradient";
  }
  return "?";
}

MB_HD float relu(float v) { return v > 0.0f ? v : 0.0f; }

// The first maximum of a 2x2 window in row-major order (the reference's tie rule).
MB_HD int first_max4(const float v[4]) {
  int k = 0;
  for (int q = 1; q < 4; ++q)
    if (v[q] > v[k]) k = q;
  return k;
}

MB_HD int ceil_div(int a, int b) { return (a + b - 1) / b; }
MB_HD int min_int(int a, int b) { return a < b ? a : b; }

// ---- Conv1Fwd: element (image, group of 8 channels, pooled position) ----
struct Conv1Fwd {
  static constexpr int kGroup = 8;
  MB_HD static int elements(const FusedArgs& a) { return a.n * (kC1 / kGroup) * kP1Plane; }
  MB_HD static void run(const FusedArgs& a, int e) {
    const int pos = e % kP1Plane, t = e / kP1Plane, cg = t % (kC1 / kGroup), i = t / (kC1 / kGroup);
    const int py = pos / kP1, px = pos % kP1;
    const int32_t sample = a.step_idx[i];
    if (cg == 0 && pos == 0) a.idx[i] = sample;
    const uint8_t* img = a.pixels + std::size_t(sample) * kPixels + (2 * py) * kSide + 2 * px;
    float x[4][4];
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c) x[r][c] = float(img[r * kSide + c]) / 255.0f;
    for (int j = 0; j < kGroup; ++j) {
      const int co = cg * kGroup + j;
      const float* w = a.w1 + co * 9;
      const float b = a.b1[co];
      float v[4];
      for (int q = 0; q < 4; ++q) {
        float s = 0.0f;
        for (int ky = 0; ky < 3; ++ky)
          for (int kx = 0; kx < 3; ++kx) s += w[ky * 3 + kx] * x[(q >> 1) + ky][(q & 1) + kx];
        v[q] = relu(s + b);
      }
      const int k = first_max4(v);
      const int out = (i * kC1 + co) * kP1Plane + pos;
      a.p1[out] = v[k];
      a.a1[out] = uint8_t(k);
    }
  }
};

// ---- Conv2Fwd: element (image, group of 4 channels, pooled position) ----
struct Conv2Fwd {
  static constexpr int kGroup = 4;
  MB_HD static int elements(const FusedArgs& a) { return a.n * (kC2 / kGroup) * kP2Plane; }
  MB_HD static void run(const FusedArgs& a, int e) {
    const int pos = e % kP2Plane, t = e / kP2Plane, cg = t % (kC2 / kGroup), i = t / (kC2 / kGroup);
    const int py = pos / kP2, px = pos % kP2;
    float acc[kGroup][4];
    for (int j = 0; j < kGroup; ++j)
      for (int q = 0; q < 4; ++q) acc[j][q] = 0.0f;
    const float* in = a.p1 + std::size_t(i) * kC1 * kP1Plane + (2 * py) * kP1 + 2 * px;
    for (int ci = 0; ci < kC1; ++ci) {
      const float* plane = in + ci * kP1Plane;
      float x[4][4];
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) x[r][c] = plane[r * kP1 + c];
      for (int j = 0; j < kGroup; ++j) {
        const float* w = a.w2 + (cg * kGroup + j) * (kC1 * 9) + ci * 9;
        for (int ky = 0; ky < 3; ++ky)
          for (int kx = 0; kx < 3; ++kx) {
            const float wv = w[ky * 3 + kx];
            for (int q = 0; q < 4; ++q) acc[j][q] += wv * x[(q >> 1) + ky][(q & 1) + kx];
          }
      }
    }
    for (int j = 0; j < kGroup; ++j) {
      const int co = cg * kGroup + j;
      float v[4];
      for (int q = 0; q < 4; ++q) v[q] = relu(acc[j][q] + a.b2[co]);
      const int k = first_max4(v);
      const int out = i * kFlat + co * kP2Plane + pos;
      a.p2[out] = v[k];
      a.a2[out] = uint8_t(k);
    }
  }
};

// ---- Fc1Fwd: reduction, tile = 4 samples x 4 outputs, terms = the 1600 inputs ----
struct Fc1Fwd {
  static constexpr int kOut = 16;
  MB_HD static int out_tiles(const FusedArgs& a) { return ceil_div(a.hidden, 4); }
  MB_HD static int tiles(const FusedArgs& a) { return ceil_div(a.n, 4) * out_tiles(a); }
  MB_HD static int terms(const FusedArgs&, int) { return kFlat; }
  MB_HD static void accumulate(const FusedArgs& a, int tile, int k, float* acc) {
    const int it = tile / out_tiles(a), ot = tile % out_tiles(a);
    for (int s = 0; s < 4; ++s) {
      const int i = min_int(it * 4 + s, a.n - 1);  // clamped: the extra results are discarded
      const float x = a.p2[i * kFlat + k];
      for (int o = 0; o < 4; ++o) {
        const int oo = min_int(ot * 4 + o, a.hidden - 1);
        acc[s * 4 + o] += x * a.fw1[oo * kFlat + k];
      }
    }
  }
  MB_HD static void finish(const FusedArgs& a, int tile, int j, float sum) {
    const int it = tile / out_tiles(a), ot = tile % out_tiles(a);
    const int i = it * 4 + j / 4, o = ot * 4 + j % 4;
    if (i < a.n && o < a.hidden) a.h[i * a.hidden + o] = relu(sum + a.fb1[o]);
  }
};

// ---- Head: element (sample). Loss and accuracy in double exactly as the reference's
// softmax_xent_* (log-sum-exp around the first maximum; argmax ties to the lowest class).
struct Head {
  MB_HD static int elements(const FusedArgs& a) { return a.n; }
  MB_HD static void run(const FusedArgs& a, int i) {
    const int H = a.hidden;
    const float* hi = a.h + i * H;
    float z[kClasses];
    int arg = 0;
    for (int c = 0; c < kClasses; ++c) {
      float s = 0.0f;
      for (int o = 0; o < H; ++o) s += a.fw2[c * H + o] * hi[o];
      z[c] = s + a.fb2[c];
      if (z[c] > z[arg]) arg = c;
    }
    const double zmax = z[arg];
    double sum = 0.0;
    for (int c = 0; c < kClasses; ++c) sum += exp(double(z[c]) - zmax);
    const double lse = zmax + log(sum);
    const int y = a.labels[a.idx[i]];
    a.sample_stats[2 * i] = lse - double(z[y]);
    a.sample_stats[2 * i + 1] = arg == y ? 1.0 : 0.0;
    if (a.dlogits == nullptr) return;
    float d[kClasses];
    for (int c = 0; c < kClasses; ++c) {
      d[c] = float((exp(double(z[c]) - lse) - (c == y ? 1.0 : 0.0)) * double(a.grad_scale));
      a.dlogits[i * kClasses + c] = d[c];
    }
    for (int o = 0; o < H; ++o) {
      float g = 0.0f;
      for (int c = 0; c < kClasses; ++c) g += d[c] * a.fw2[c * H + o];
      a.dh[i * H + o] = hi[o] > 0.0f ? g : 0.0f;
    }
  }
  // The batch's statistics, in sample order (the device's last block does the same).
  MB_HD static void add_stats(const FusedArgs& a) {
    double l = 0.0, c = 0.0;
    for (int i = 0; i < a.n; ++i) l += a.sample_stats[2 * i], c += a.sample_stats[2 * i + 1];
    a.stats[0] += l;
    a.stats[1] += c;
  }
};

// ---- DenseBwd, role W1: reduction, tile = 4 outputs x 4 inputs of fc1, terms = samples ----
struct Fc1Wgrad {
  static constexpr int kOut = 16;
  static constexpr int kInTiles = kFlat / 4;  // 400
  MB_HD static int tiles(const FusedArgs& a) { return ceil_div(a.hidden, 4) * kInTiles; }
  MB_HD static int terms(const FusedArgs& a, int) { return a.n; }
  MB_HD static void accumulate(const FusedArgs& a, int tile, int i, float* acc) {
    const int ot = tile / kInTiles, kt = tile % kInTiles;
    const float* x = a.p2 + i * kFlat + kt * 4;
    for (int o = 0; o < 4; ++o) {
      const float g = a.dh[i * a.hidden + min_int(ot * 4 + o, a.hidden - 1)];
      for (int q = 0; q < 4; ++q) acc[o * 4 + q] += g * x[q];
    }
  }
  MB_HD static void finish(const FusedArgs& a, int tile, int j, float sum) {
    const int ot = tile / kInTiles, kt = tile % kInTiles;
    const int o = ot * 4 + j / 4, k = kt * 4 + j % 4;
    if (o < a.hidden) a.gfw1[o * kFlat + k] = sum;
  }
};

// ---- DenseBwd, role W2: reduction, tile = (class c, 8 hidden units); c = 10 is fc1's bias ----
struct Fc2Wgrad {
  static constexpr int kOut = 9;
  MB_HD static int out_tiles(const FusedArgs& a) { return ceil_div(a.hidden, 8); }
  MB_HD static int tiles(const FusedArgs& a) { return (kClasses + 1) * out_tiles(a); }
  MB_HD static int terms(const FusedArgs& a, int) { return a.n; }
  MB_HD static void accumulate(const FusedArgs& a, int tile, int i, float* acc) {
    const int c = tile / out_tiles(a), ot = tile % out_tiles(a);
    const float* hi = c < kClasses ? a.h + i * a.hidden : a.dh + i * a.hidden;
    const float d = c < kClasses ? a.dlogits[i * kClasses + c] : 1.0f;
    for (int o = 0; o < 8; ++o) acc[o] += d * hi[min_int(ot * 8 + o, a.hidden - 1)];
    acc[8] += d;
  }
  MB_HD static void finish(const FusedArgs& a, int tile, int j, float sum) {
    const int c = tile / out_tiles(a), ot = tile % out_tiles(a);
    if (j == 8) {
      if (c < kClasses && ot == 0) a.gfb2[c] = sum;
      return;
    }
    const int o = ot * 8 + j;
    if (o >= a.hidden) return;
    if (c < kClasses)
      a.gfw2[c * a.hidden + o] = sum;
    else
      a.gfb1[o] = sum;
  }
};

// ---- DenseBwd, role dP2: element (sample, 4 inputs of fc1): g2 = (dh W1) where p2 > 0 ----
struct Fc1Dgrad {
  MB_HD static int elements(const FusedArgs& a) { return a.n * (kFlat / 4); }
  MB_HD static void run(const FusedArgs& a, int e) {
    const int i = e / (kFlat / 4), k0 = (e % (kFlat / 4)) * 4;
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int o = 0; o < a.hidden; ++o) {
      const float g = a.dh[i * a.hidden + o];
      const float* w = a.fw1 + o * kFlat + k0;
      for (int q = 0; q < 4; ++q) s[q] += g * w[q];
    }
    for (int q = 0; q < 4; ++q) {
      const int at = i * kFlat + k0 + q;
      a.g2[at] = a.p2[at] > 0.0f ? s[q] : 0.0f;
    }
  }
};

// ---- Conv2Wgrad: reduction, tile = (output channel, group of 4 input channels), terms =
// (sample, pooled position); the bias rides along in the group-0 tiles ----
struct Conv2Wgrad {
  static constexpr int kGroup = 4;
  static constexpr int kGroups = kC1 / kGroup;  // 8
  static constexpr int kOut = kGroup * 9 + 1;   // 37
  MB_HD static int tiles(const FusedArgs&) { return kC2 * kGroups; }
  MB_HD static int terms(const FusedArgs& a, int) { return a.n * kP2Plane; }
  MB_HD static void accumulate(const FusedArgs& a, int tile, int term, float* acc) {
    const int co = tile / kGroups, cg = tile % kGroups;
    const int i = term / kP2Plane, pos = term % kP2Plane;
    const int at = i * kFlat + co * kP2Plane + pos;
    const float g = a.g2[at];
    if (g == 0.0f) return;
    const int k = a.a2[at];
    const int oy = 2 * (pos / kP2) + (k >> 1), ox = 2 * (pos % kP2) + (k & 1);
    for (int c = 0; c < kGroup; ++c) {
      const float* x = a.p1 + (i * kC1 + cg * kGroup + c) * kP1Plane + oy * kP1 + ox;
      for (int ky = 0; ky < 3; ++ky)
        for (int kx = 0; kx < 3; ++kx) acc[c * 9 + ky * 3 + kx] += g * x[ky * kP1 + kx];
    }
    acc[kOut - 1] += g;
  }
  MB_HD static void finish(const FusedArgs& a, int tile, int j, float sum) {
    const int co = tile / kGroups, cg = tile % kGroups;
    if (j == kOut - 1) {
      if (cg == 0) a.gb2[co] = sum;
      return;
    }
    a.gw2[co * (kC1 * 9) + (cg * kGroup + j / 9) * 9 + j % 9] = sum;
  }
};

// ---- Conv2Dgrad: element (sample, position of p1): gathers, for every output channel and
// every pool window whose argmax lies within the 3x3 neighbourhood, g2 x W2 ----
struct Conv2Dgrad {
  MB_HD static int elements(const FusedArgs& a) { return a.n * kP1Plane; }
  MB_HD static void run(const FusedArgs& a, int e) {
    const int i = e / kP1Plane, pos = e % kP1Plane, y = pos / kP1, x = pos % kP1;
    float acc[kC1];
    for (int c = 0; c < kC1; ++c) acc[c] = 0.0f;
    // Windows whose conv rows {2py, 2py+1} meet [y-2, y] (rows 10 and beyond are not pooled).
    const int py_lo = y >= 2 ? (y - 2) / 2 : 0, py_hi = min_int(kP2 - 1, y / 2);
    const int px_lo = x >= 2 ? (x - 2) / 2 : 0, px_hi = min_int(kP2 - 1, x / 2);
    for (int co = 0; co < kC2; ++co) {
      for (int py = py_lo; py <= py_hi; ++py)
        for (int px = px_lo; px <= px_hi; ++px) {
          const int at = i * kFlat + co * kP2Plane + py * kP2 + px;
          const float g = a.g2[at];
          if (g == 0.0f) continue;
          const int k = a.a2[at];
          const int ky = y - (2 * py + (k >> 1)), kx = x - (2 * px + (k & 1));
          if (ky < 0 || ky > 2 || kx < 0 || kx > 2) continue;
          const float* w = a.w2 + co * (kC1 * 9) + ky * 3 + kx;
          for (int c = 0; c < kC1; ++c) acc[c] += g * w[c * 9];
        }
    }
    for (int c = 0; c < kC1; ++c) {
      const int at = (i * kC1 + c) * kP1Plane + pos;
      a.g1[at] = a.p1[at] > 0.0f ? acc[c] : 0.0f;
    }
  }
};

// ---- Conv1Wgrad: reduction, tile = output channel, terms = (sample, pooled position) ----
struct Conv1Wgrad {
  static constexpr int kOut = 10;  // 9 weights and the bias
  MB_HD static int tiles(const FusedArgs&) { return kC1; }
  MB_HD static int terms(const FusedArgs& a, int) { return a.n * kP1Plane; }
  MB_HD static void accumulate(const FusedArgs& a, int co, int term, float* acc) {
    const int i = term / kP1Plane, pos = term % kP1Plane;
    const int at = (i * kC1 + co) * kP1Plane + pos;
    const float g = a.g1[at];
    if (g == 0.0f) return;
    const int k = a.a1[at];
    const int oy = 2 * (pos / kP1) + (k >> 1), ox = 2 * (pos % kP1) + (k & 1);
    const uint8_t* img = a.pixels + std::size_t(a.idx[i]) * kPixels + oy * kSide + ox;
    for (int ky = 0; ky < 3; ++ky)
      for (int kx = 0; kx < 3; ++kx) acc[ky * 3 + kx] += g * (float(img[ky * kSide + kx]) / 255.0f);
    acc[9] += g;
  }
  MB_HD static void finish(const FusedArgs& a, int co, int j, float sum) {
    if (j < 9)
      a.gw1[co * 9 + j] = sum;
    else
      a.gb1[co] = sum;
  }
};

}  // namespace mb::fused
