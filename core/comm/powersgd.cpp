// PowerSGD's layout, per-replica arithmetic and communicator (see powersgd.h). The loops keep one
// fixed order of additions and are plain C++ (compiled with -ffp-contract=off), so the same sums
// give the same bits on every replica, whatever CPU each runs on.
#include "comm/powersgd.h"

#include "comm/forwarding_communicator.h"
#include "comm/wire_format.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numbers>
#include <utility>

#include "util/error.h"

namespace mb {
namespace {

using Clock = std::chrono::steady_clock;

// PyTorch's min_compression_rate: compress only where the factors are under half the matrix.
constexpr int64_t kMinCompressionRate = 2;

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Standard normal values (Box-Muller on splitmix64): the same on every replica and machine.
void fill_normal(std::span<float> out, uint64_t seed) {
  uint64_t state = seed;
  for (std::size_t i = 0; i < out.size(); i += 2) {
    const double u1 = (double(splitmix64(state) >> 11) + 1.0) * 0x1.0p-53;   // (0, 1]
    const double u2 = double(splitmix64(state) >> 11) * 0x1.0p-53;
    const double radius = std::sqrt(-2.0 * std::log(u1));
    out[i] = float(radius * std::cos(2 * std::numbers::pi * u2));
    if (i + 1 < out.size()) out[i + 1] = float(radius * std::sin(2 * std::numbers::pi * u2));
  }
}

}  // namespace

std::size_t PowerSgdLayout::plain_floats() const {
  std::size_t n = 0;
  for (const Span& s : plain) n += s.count;
  return n;
}

std::size_t PowerSgdLayout::p_floats() const {
  std::size_t n = 0;
  for (const Matrix& m : matrices) n += std::size_t(m.rows) * std::size_t(m.rank);
  return n;
}

std::size_t PowerSgdLayout::q_floats() const {
  std::size_t n = 0;
  for (const Matrix& m : matrices) n += std::size_t(m.cols) * std::size_t(m.rank);
  return n;
}

PowerSgdLayout powersgd_layout(const std::vector<ParamTensor>& params, std::size_t count, int rank) {
  MB_CHECK(rank >= 1, ConfigError, "--powersgd: the rank must be at least 1 (got {})", rank);
  PowerSgdLayout layout;
  layout.count = count;
  std::size_t covered = 0;
  for (const ParamTensor& t : params) {
    const int64_t rows = t.rank >= 2 ? t.shape[0] : 0;
    const int64_t cols = rows > 0 ? int64_t(t.size) / rows : 0;
    const int r = int(std::min<int64_t>({rank, rows, cols}));
    if (t.rank >= 2 && r >= 1 && (rows + cols) * r * kMinCompressionRate < rows * cols)
      layout.matrices.push_back({t.offset, rows, cols, r});
    else
      layout.plain.push_back({t.offset, t.size});
    covered += t.size;
  }
  MB_CHECK(covered == count, Error, "PowerSGD: the parameter tensors hold {} values, the gradients {}", covered,
           count);
  return layout;
}

void orthonormalize_columns(std::span<float> m, int64_t rows, int rank) {
  for (int k = 0; k < rank; ++k) {
    float* col = m.data() + k * rows;
    double norm2 = 0;
    for (int64_t i = 0; i < rows; ++i) norm2 += double(col[i]) * col[i];
    const float inverse = norm2 > 0 ? float(1.0 / std::sqrt(norm2)) : 0.0f;
    for (int64_t i = 0; i < rows; ++i) col[i] *= inverse;
    for (int k2 = k + 1; k2 < rank; ++k2) {
      float* other = m.data() + k2 * rows;
      double dot = 0;
      for (int64_t i = 0; i < rows; ++i) dot += double(col[i]) * other[i];
      const float d = float(dot);
      for (int64_t i = 0; i < rows; ++i) other[i] -= d * col[i];
    }
  }
}

namespace {

// sum_j a[j] b[j] over eight fixed partial sums (vectorised, the same order on every call).
float dot(const float* a, const float* b, int64_t n) {
  float part[8] = {};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) part[l] += a[j + l] * b[j + l];
  float sum = 0;
  for (int l = 0; l < 8; ++l) sum += part[l];
  for (; j < n; ++j) sum += a[j] * b[j];
  return sum;
}

}  // namespace

PowerSgdState::PowerSgdState(PowerSgdLayout layout, uint64_t seed) : layout_(std::move(layout)) {
  for (std::size_t i = 0; i < layout_.matrices.size(); ++i) {
    const PowerSgdLayout::Matrix& m = layout_.matrices[i];
    q_.emplace_back(std::size_t(m.cols) * std::size_t(m.rank));
    fill_normal(q_.back(), seed + 0x1000 * (i + 1));
    error_.emplace_back(std::size_t(m.rows) * std::size_t(m.cols), 0.0f);
  }
}

// P and Q are column-major (rank columns of rows, or of cols, values each): Gram-Schmidt and the
// products below then run along contiguous memory.
void PowerSgdState::encode_p(std::span<float> grads, std::span<float> first) {
  MB_CHECK(grads.size() == layout_.count && first.size() == layout_.plain_floats() + layout_.p_floats(), Error,
           "PowerSGD: encode_p with {} gradients and {} slots", grads.size(), first.size());
  std::size_t at = 0;
  for (const PowerSgdLayout::Span& s : layout_.plain) {
    std::copy_n(grads.begin() + std::ptrdiff_t(s.offset), s.count, first.begin() + std::ptrdiff_t(at));
    at += s.count;
  }
  for (std::size_t t = 0; t < layout_.matrices.size(); ++t) {
    const auto& [offset, rows, cols, r] = layout_.matrices[t];
    float* m = grads.data() + offset;
    const float* e = error_[t].data();
    for (std::size_t i = 0; i < std::size_t(rows * cols); ++i) m[i] += e[i];
    float* p = first.data() + at;
    for (int k = 0; k < r; ++k)
      for (int64_t i = 0; i < rows; ++i) p[k * rows + i] = dot(m + i * cols, q_[t].data() + k * cols, cols);
    at += std::size_t(rows * r);
  }
}

void PowerSgdState::encode_q(std::span<float> grads, std::span<float> first, std::span<float> second) {
  MB_CHECK(second.size() == layout_.q_floats(), Error, "PowerSGD: encode_q with {} slots", second.size());
  std::size_t at = 0;
  for (const PowerSgdLayout::Span& s : layout_.plain) {
    std::copy_n(first.begin() + std::ptrdiff_t(at), s.count, grads.begin() + std::ptrdiff_t(s.offset));
    at += s.count;
  }
  std::size_t q_at = 0;
  for (const auto& [offset, rows, cols, r] : layout_.matrices) {
    const std::span<float> p = first.subspan(at, std::size_t(rows * r));
    orthonormalize_columns(p, rows, r);
    float* q = second.data() + q_at;
    std::fill_n(q, cols * r, 0.0f);
    const float* m = grads.data() + offset;
    // Q[:, k] = sum_i P^[i, k] M[i, :]: row by row, so every element adds in the order of i.
    for (int64_t i = 0; i < rows; ++i)
      for (int k = 0; k < r; ++k) {
        const float pik = p[std::size_t(k * rows + i)];
        float* qk = q + k * cols;
        const float* mi = m + i * cols;
        for (int64_t j = 0; j < cols; ++j) qk[j] += pik * mi[j];
      }
    at += std::size_t(rows * r);
    q_at += std::size_t(cols * r);
  }
}

void PowerSgdState::decode(std::span<float> grads, std::span<const float> first, std::span<const float> second,
                           int replicas) {
  std::size_t at = layout_.plain_floats(), q_at = 0;
  const float n = float(replicas);
  std::vector<float> approx;
  for (std::size_t t = 0; t < layout_.matrices.size(); ++t) {
    const auto& [offset, rows, cols, r] = layout_.matrices[t];
    const float* p = first.data() + at;
    const float* q = second.data() + q_at;
    float* e = error_[t].data();
    approx.resize(std::size_t(cols));
    for (int64_t i = 0; i < rows; ++i) {
      // Row i of P^ Q^T, each element summed over k in order.
      std::fill(approx.begin(), approx.end(), 0.0f);
      for (int k = 0; k < r; ++k) {
        const float pik = p[k * rows + i];
        const float* qk = q + k * cols;
        for (int64_t j = 0; j < cols; ++j) approx[std::size_t(j)] += pik * qk[j];
      }
      float* mi = grads.data() + offset + i * cols;
      float* ei = e + i * cols;
      for (int64_t j = 0; j < cols; ++j) {
        ei[j] = mi[j] - approx[std::size_t(j)] / n;
        mi[j] = approx[std::size_t(j)];
      }
    }
    std::copy_n(q, cols * r, q_[t].begin());
    at += std::size_t(rows * r);
    q_at += std::size_t(cols * r);
  }
}

namespace {

class PowerSgdCommunicator final : public ForwardingCommunicator {
 public:
  PowerSgdCommunicator(std::unique_ptr<Communicator> inner, PowerSgdLayout layout, uint64_t seed)
      : ForwardingCommunicator(std::move(inner)), state_(std::move(layout), seed) {
    first_.resize(state_.layout().plain_floats() + state_.layout().p_floats());
    second_.resize(state_.layout().q_floats());
  }

  // The gradient buffer (the layout's length) is compressed; any other all-reduce passes.
  void all_reduce_sum(float* data, std::size_t count) override {
    if (size() == 1 || count != state_.layout().count) return inner_->all_reduce_sum(data, count);
    const std::span<float> grads(data, count);
    pending_ += inner_->take_times();
    const auto t0 = Clock::now();
    state_.encode_p(grads, first_);
    inner_->all_reduce_sum(first_.data(), first_.size());
    state_.encode_q(grads, first_, second_);
    if (!second_.empty()) inner_->all_reduce_sum(second_.data(), second_.size());
    state_.decode(grads, first_, second_, size());
    CollectiveTimes inner = inner_->take_times();
    // The factor arithmetic is the exchange's own work, as a codec's.
    const double total = std::chrono::duration<double>(Clock::now() - t0).count();
    inner.transfer_s += std::max(0.0, total - inner.wait_s - inner.transfer_s - inner.hidden_s);
    pending_ += inner;
  }
  // Buckets would split the gradient the factors are made of: one exchange after backward.
  void overlap_next_all_reduce(std::span<const OverlapBucket>) override {}

 private:
  PowerSgdState state_;
  std::vector<float> first_, second_;
};

}  // namespace

double gradient_wire_bytes(const ModelShape& shape, const Scenario& scenario) {
  if (scenario.powersgd_rank > 0)
    return double(powersgd_layout(shape.params, shape.param_count, scenario.powersgd_rank).wire_floats()) *
           sizeof(float);
  return bytes_on_wire(shape.gradient_bytes(), scenario.allreduce_dtype);
}

std::unique_ptr<Communicator> make_powersgd(std::unique_ptr<Communicator> inner, PowerSgdLayout layout, uint64_t seed) {
  MB_CHECK(inner->memory_space() == MemorySpace::Host, ConfigError,
           "--powersgd: PowerSGD runs between CPU replicas in this version");
  if (inner->size() == 1) return inner;   // one replica exchanges nothing: nothing to compress
  return std::make_unique<PowerSgdCommunicator>(std::move(inner), std::move(layout), seed);
}

}  // namespace mb
