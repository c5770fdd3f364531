// The reference forward loops as templates, so the finite-difference tests run the identical
// loops in double (differences without float rounding noise); layers.h is their float API.
// Sums are accumulated in double; a padded tap or pixel is skipped, so valid padding runs
// exactly the loops it always did.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "backends/reference/layers.h"
#include "util/error.h"

namespace mb::ref::loops {

inline std::size_t idx4(int a, int b, int c, int d, int nb, int nc, int nd) {
  return ((static_cast<std::size_t>(a) * nb + b) * nc + c) * nd + d;
}

template <typename T>
void conv2d_forward(const ConvShape& s, const T* x, const T* weight, const T* bias, T* y) {
  const int oh = s.out_h(), ow = s.out_w(), k = s.k;
  for (int n = 0; n < s.n; ++n)
    for (int co = 0; co < s.c_out; ++co)
      for (int oy = 0; oy < oh; ++oy)
        for (int ox = 0; ox < ow; ++ox) {
          double acc = bias ? double(bias[co]) : 0.0;
          for (int ci = 0; ci < s.c_in; ++ci)
            for (int ky = 0; ky < k; ++ky) {
              const int iy = oy + ky - s.pad;
              if (iy < 0 || iy >= s.h) continue;
              for (int kx = 0; kx < k; ++kx) {
                const int ix = ox + kx - s.pad;
                if (ix < 0 || ix >= s.w) continue;
                acc += static_cast<double>(x[idx4(n, ci, iy, ix, s.c_in, s.h, s.w)]) *
                       weight[idx4(co, ci, ky, kx, s.c_in, k, k)];
              }
            }
          y[idx4(n, co, oy, ox, s.c_out, oh, ow)] = static_cast<T>(acc);
        }
}

template <typename T>
void relu_forward(const T* x, T* y, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
}

// The pixels of output (oy, ox)'s 2x2 window that lie inside an h x w plane.
struct Window {
  int y0, y1, x0, x1;   // [y0, y1) x [x0, x1)
  Window(int h, int w, int oy, int ox)
      : y0(2 * oy), y1(std::min(2 * oy + 2, h)), x0(2 * ox), x1(std::min(2 * ox + 2, w)) {}
  int count() const { return (y1 - y0) * (x1 - x0); }
};

// Offset (within the plane) of the window's maximum; strict '>' keeps the first in scan order.
template <typename T>
std::size_t window_argmax(const T* plane, int h, int w, int oy, int ox) {
  const Window win(h, w, oy, ox);
  std::size_t best = static_cast<std::size_t>(win.y0) * w + win.x0;
  for (int y = win.y0; y < win.y1; ++y)
    for (int x = win.x0; x < win.x1; ++x) {
      const std::size_t at = static_cast<std::size_t>(y) * w + x;
      if (plane[at] > plane[best]) best = at;
    }
  return best;
}

template <typename T>
void maxpool2x2_forward(const PoolShape& s, const T* x, T* y) {
  const int oh = s.out_h(), ow = s.out_w();
  const std::size_t in_plane = static_cast<std::size_t>(s.h) * s.w;
  const std::size_t out_plane = static_cast<std::size_t>(oh) * ow;
  for (std::size_t p = 0; p < static_cast<std::size_t>(s.n) * s.c; ++p) {
    const T* xp = x + p * in_plane;
    T* yp = y + p * out_plane;
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox) yp[oy * ow + ox] = xp[window_argmax(xp, s.h, s.w, oy, ox)];
  }
}

template <typename T>
void avgpool2x2_forward(const PoolShape& s, const T* x, T* y) {
  const int oh = s.out_h(), ow = s.out_w();
  const std::size_t in_plane = static_cast<std::size_t>(s.h) * s.w;
  const std::size_t out_plane = static_cast<std::size_t>(oh) * ow;
  for (std::size_t p = 0; p < static_cast<std::size_t>(s.n) * s.c; ++p) {
    const T* xp = x + p * in_plane;
    T* yp = y + p * out_plane;
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox) {
        const Window win(s.h, s.w, oy, ox);
        double sum = 0;
        for (int yy = win.y0; yy < win.y1; ++yy)
          for (int xx = win.x0; xx < win.x1; ++xx) sum += xp[static_cast<std::size_t>(yy) * s.w + xx];
        yp[oy * ow + ox] = static_cast<T>(sum / win.count());
      }
  }
}

template <typename T>
void global_avg_pool_forward(int n, int c, int hw, const T* x, T* y) {
  for (std::size_t p = 0; p < static_cast<std::size_t>(n) * c; ++p) {
    double sum = 0;
    for (int i = 0; i < hw; ++i) sum += x[p * hw + i];
    y[p] = static_cast<T>(sum / hw);
  }
}

template <typename T>
void dense_forward(const DenseShape& s, const T* x, const T* weight, const T* bias, T* y) {
  for (int n = 0; n < s.n; ++n)
    for (int o = 0; o < s.out; ++o) {
      const T* xr = x + static_cast<std::size_t>(n) * s.in;
      const T* wr = weight + static_cast<std::size_t>(o) * s.in;
      double acc = bias ? double(bias[o]) : 0.0;
      for (int i = 0; i < s.in; ++i) acc += static_cast<double>(xr[i]) * wr[i];
      y[static_cast<std::size_t>(n) * s.out + o] = static_cast<T>(acc);
    }
}

inline void check_label(uint8_t label, int classes, int sample) {
  MB_CHECK(label < classes, DataError, "label {} of sample {} is not a class (the model has {} classes)",
           static_cast<int>(label), sample, classes);
}

// log(sum(exp(z))) computed stably in double.
template <typename T>
double log_sum_exp(const T* z, int classes) {
  const double zmax = *std::max_element(z, z + classes);
  double sum = 0.0;
  for (int c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(z[c]) - zmax);
  return zmax + std::log(sum);
}

template <typename T>
BatchStats softmax_xent_forward(const T* logits, const uint8_t* labels, int n, int classes) {
  BatchStats stats;
  for (int i = 0; i < n; ++i) {
    check_label(labels[i], classes, i);
    const T* z = logits + static_cast<std::size_t>(i) * classes;
    stats.loss_sum += log_sum_exp(z, classes) - static_cast<double>(z[labels[i]]);
    // max_element returns the first maximum: ties go to the lowest class index.
    const int predicted = static_cast<int>(std::max_element(z, z + classes) - z);
    if (predicted == labels[i]) ++stats.correct;
  }
  stats.samples = n;
  return stats;
}

}  // namespace mb::ref::loops
