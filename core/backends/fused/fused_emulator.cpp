// The fused step's kernels run on the host (see fused_emulator.h).
#include "backends/fused/fused_emulator.h"

#include "model/cnn_spec.h"

namespace mb::fused {

HostActivations::HostActivations(int capacity, int hidden_width)
    : idx(std::size_t(capacity)),
      p1(std::size_t(capacity) * kC1 * kP1Plane),
      p2(std::size_t(capacity) * kFlat),
      h(std::size_t(capacity) * hidden_width),
      dlogits(std::size_t(capacity) * kClasses),
      dh(std::size_t(capacity) * hidden_width),
      g2(p2.size()),
      g1(p1.size()),
      a1(p1.size()),
      a2(p2.size()),
      sample_stats(std::size_t(capacity) * 2),
      hidden(hidden_width) {}

ParamOffsets param_offsets(int hidden) {
  ParamOffsets o{};
  o.w1 = 0;
  o.b1 = o.w1 + kC1 * 9;
  o.w2 = o.b1 + kC1;
  o.b2 = o.w2 + std::size_t(kC2) * kC1 * 9;
  o.fw1 = o.b2 + kC2;
  o.fb1 = o.fw1 + std::size_t(hidden) * kFlat;
  o.fw2 = o.fb1 + std::size_t(hidden);
  o.fb2 = o.fw2 + std::size_t(kClasses) * hidden;
  o.total = o.fb2 + kClasses;
  return o;
}

void bind_params(FusedArgs& a, const float* p, float* g) {
  const ParamOffsets o = param_offsets(a.hidden);
  a.w1 = p + o.w1, a.b1 = p + o.b1, a.w2 = p + o.w2, a.b2 = p + o.b2;
  a.fw1 = p + o.fw1, a.fb1 = p + o.fb1, a.fw2 = p + o.fw2, a.fb2 = p + o.fb2;
  if (g == nullptr) return;
  a.gw1 = g + o.w1, a.gb1 = g + o.b1, a.gw2 = g + o.w2, a.gb2 = g + o.b2;
  a.gfw1 = g + o.fw1, a.gfb1 = g + o.fb1, a.gfw2 = g + o.fw2, a.gfb2 = g + o.fb2;
}

FusedArgs HostActivations::args(int n, const int32_t* step_idx, float grad_scale, double* stats, const uint8_t* pixels,
                                const uint8_t* labels, const float* params, float* grads, bool backward) {
  FusedArgs a;
  a.n = n;
  a.hidden = hidden;
  a.step_idx = step_idx;
  a.grad_scale = grad_scale;
  a.stats = stats;
  a.pixels = pixels;
  a.labels = labels;
  bind_params(a, params, grads);
  a.idx = idx.data();
  a.p1 = p1.data(), a.a1 = a1.data(), a.p2 = p2.data(), a.a2 = a2.data(), a.h = h.data();
  a.dlogits = backward ? dlogits.data() : nullptr;
  a.dh = dh.data(), a.g2 = g2.data(), a.g1 = g1.data();
  a.sample_stats = sample_stats.data();
  return a;
}

void emulate_kernel(FusedKernel k, const FusedArgs& a) {
  switch (k) {
    case FusedKernel::Conv1Fwd: return emulate_elements<Conv1Fwd>(a);
    case FusedKernel::Conv2Fwd: return emulate_elements<Conv2Fwd>(a);
    case FusedKernel::Fc1Fwd: return emulate_reduction<Fc1Fwd>(a);
    case FusedKernel::Head:
      emulate_elements<Head>(a);
      return Head::add_stats(a);
    case FusedKernel::DenseBwd:
      emulate_reduction<Fc1Wgrad>(a);
      emulate_reduction<Fc2Wgrad>(a);
      return emulate_elements<Fc1Dgrad>(a);
    case FusedKernel::Conv2Wgrad: return emulate_reduction<Conv2Wgrad>(a);
    case FusedKernel::Conv2Dgrad: return emulate_elements<Conv2Dgrad>(a);
    case FusedKernel::Conv1Wgrad: return emulate_reduction<Conv1Wgrad>(a);
  }
}

void emulate_step(const FusedArgs& a) {
  const int kernels = a.dlogits ? kFusedKernels : kFusedForwardKernels;
  for (int k = 0; k < kernels; ++k) emulate_kernel(static_cast<FusedKernel>(k), a);
}

}  // namespace mb::fused
