// A model (model/model_spec.h) run on the reference layers: forward, backward and the
// softmax cross-entropy, layer by layer in the order of its list. The ground truth of every
// engine, for any model the engines train.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "backends/reference/layers.h"
#include "backends/replica_engine.h"
#include "model/dropout.h"
#include "model/model_spec.h"

namespace mb {

// Each layer's output and its gradient for a batch (outputs after the layer's ReLU, which runs in
// place), and the dropout layers' masks; grown on demand, reused between calls.
struct ReferenceWorkspace {
  explicit ReferenceWorkspace(const ModelSpec& model = {});
  ModelSpec model;
  int capacity = 0;
  std::vector<std::vector<float>> out, d_out;    // per layer: [n, out.size()]
  std::vector<std::vector<uint8_t>> kept;        // per dropout layer: 1 where the element was kept

  void reserve(int n);   // makes room for n samples (never shrinks)
};

// Forward + backward over n images (n x input size floats in [0, 1]) with their labels.
// params and grads are flat buffers of ws.model.param_count() floats (model_shape.h's layout);
// grads = d(sum of per-sample losses)/dθ * grad_scale, OVERWRITTEN (n == 0: all zeros, zero
// stats). Dropout layers drop by `samples`. Returns the batch's loss sum, correct count and
// sample count.
BatchStats reference_forward_backward(const float* params, const float* images, const uint8_t* labels, int n,
                                      float grad_scale, float* grads, ReferenceWorkspace& ws,
                                      const SampleKeys& samples = {});

// Forward only, without dropout (validation): loss sum, correct count, sample count. Leaves the
// activations in ws.
BatchStats reference_forward(const float* params, const float* images, const uint8_t* labels, int n,
                             ReferenceWorkspace& ws);

// The same forward loops over double parameters and images (loss sum, correct, samples), with
// the training masks of `samples` when `training`. For the finite-difference tests: differences
// of this carry no float rounding noise.
BatchStats reference_forward_double(const double* params, const double* images, const uint8_t* labels, int n,
                                    const ModelSpec& model = {}, bool training = false,
                                    const SampleKeys& samples = {});

}  // namespace mb
