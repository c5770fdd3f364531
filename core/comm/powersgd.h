// PowerSGD (--powersgd RANK; Vogels, Karimireddy and Jaggi, NeurIPS 2019; PyTorch's
// powerSGD_hook): the gradient all-reduce sends each weight matrix M (rows x cols) as two thin
// factors of rank r instead of its rows x cols values.
//
// One step, on every replica i with local gradient M_i:
//   M_i += E_i                      error feedback: what earlier steps' compression left out
//   P = sum_i M_i Q                 all-reduced (with the tensors sent as they are)
//   P^ = P with orthonormal columns (Gram-Schmidt)
//   Q = sum_i M_i^T P^              all-reduced; kept for the next step (warm start)
//   sum_i M_i ~ P^ Q^T              what the step applies
//   E_i = M_i - P^ Q^T / N
// P^ and Q are all-reduced sums, identical on every replica, so every replica applies the same
// bits and replicas stay bit-identical; only E_i is a replica's own. Biases and matrices whose
// factors would not be under half their size travel uncompressed (PyTorch's
// min_compression_rate 2). The first Q is the same pseudo-random normal matrix on every
// replica (from the run's seed). With one replica nothing travels and nothing is compressed.
//
// The wrapper goes outside a simulated link, so the link times the two small all-reduces it
// really makes (comm/simulated_link.h); the factor arithmetic is the exchange's own time.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "config/scenario.h"
#include "model/model_shape.h"

namespace mb {

struct PowerSgdLayout {
  struct Matrix {
    std::size_t offset = 0;      // into the gradient buffer
    int64_t rows = 0, cols = 0;  // the weight seen as [its first dimension, the rest], as PyTorch's view(n, -1)
    int rank = 0;                // min(RANK, rows, cols)
  };
  struct Span {
    std::size_t offset = 0, count = 0;
  };
  std::vector<Matrix> matrices;  // compressed
  std::vector<Span> plain;       // sent as they are
  std::size_t count = 0;         // the whole gradient buffer

  std::size_t plain_floats() const;
  std::size_t p_floats() const;  // sum of rows x rank
  std::size_t q_floats() const;  // sum of cols x rank
  // What one step's two all-reduces carry, in floats: the plain tensors and the P factors, then
  // the Q factors.
  std::size_t wire_floats() const { return plain_floats() + p_floats() + q_floats(); }
};

// Which of a model's parameter tensors compress at `rank` (>= 1), and which travel as they are.
PowerSgdLayout powersgd_layout(const std::vector<ParamTensor>& params, std::size_t count, int rank);

// One replica's PowerSGD state (its error feedback and the warm-start Q) and arithmetic; the
// communicator below drives it, and a test can run N of them side by side.
class PowerSgdState {
 public:
  PowerSgdState(PowerSgdLayout layout, uint64_t seed);

  const PowerSgdLayout& layout() const { return layout_; }
  // Adds the error feedback to `grads`, then fills `first` (plain_floats + p_floats) with the
  // plain tensors and this replica's P = M Q.
  void encode_p(std::span<float> grads, std::span<float> first);
  // `first` summed over replicas: the plain sums go back into `grads`, P is orthonormalised
  // in place, and `second` (q_floats) gets this replica's M^T P^.
  void encode_q(std::span<float> grads, std::span<float> first, std::span<float> second);
  // `second` summed over replicas: each matrix of `grads` becomes P^ Q^T, the error is kept,
  // and Q is kept for the next step.
  void decode(std::span<float> grads, std::span<const float> first, std::span<const float> second, int replicas);

 private:
  PowerSgdLayout layout_;
  std::vector<std::vector<float>> q_;       // per matrix, cols x rank (row-major)
  std::vector<std::vector<float>> error_;   // per matrix, rows x cols
};

// Gram-Schmidt on the columns of a column-major rows x rank matrix, in place (a zero column stays zero).
void orthonormalize_columns(std::span<float> m, int64_t rows, int rank);

// What one gradient exchange of `shape` carries under `scenario`, in bytes: with PowerSGD its
// two exchanges (plain tensors and P, then Q), else the gradient in the wire type.
double gradient_wire_bytes(const ModelShape& shape, const Scenario& scenario);

std::unique_ptr<Communicator> make_powersgd(std::unique_ptr<Communicator> inner, PowerSgdLayout layout, uint64_t seed);

}  // namespace mb
