// Plain-loop reference layers: the float API over layer_loops.h's forward templates, and the
// backward loops. Loop orders keep the innermost loop contiguous where that costs no clarity,
// because the reference engine also trains (slowly) and the tests run it on whole batches.
#include "backends/reference/layers.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/reference/layer_loops.h"

namespace mb::ref {

using loops::idx4;

// ---- conv2d -------------------------------------------------------------------------------

void conv2d_forward(const ConvShape& s, const float* x, const float* weight, const float* bias, float* y) {
  loops::conv2d_forward(s, x, weight, bias, y);
}

void conv2d_backward(const ConvShape& s, const float* x, const float* weight, const float* dy, float* dx,
                     float* dweight, float* dbias) {
  const int oh = s.out_h(), ow = s.out_w(), k = s.k;

  // dbias[co] = sum over n, oy, ox of dy.
  for (int co = 0; dbias && co < s.c_out; ++co) {
    double acc = 0.0;
    for (int n = 0; n < s.n; ++n)
      for (int oy = 0; oy < oh; ++oy)
        for (int ox = 0; ox < ow; ++ox) acc += dy[idx4(n, co, oy, ox, s.c_out, oh, ow)];
    dbias[co] = static_cast<float>(acc);
  }

  // dweight[co,ci,ky,kx] = sum over n, oy, ox of dy[n,co,oy,ox] * x[n,ci,oy+ky-pad,ox+kx-pad]
  // (the taps that fall inside the image).
  for (int co = 0; co < s.c_out; ++co)
    for (int ci = 0; ci < s.c_in; ++ci)
      for (int ky = 0; ky < k; ++ky)
        for (int kx = 0; kx < k; ++kx) {
          const int ox0 = std::max(0, s.pad - kx), ox1 = std::min(ow, s.w + s.pad - kx);
          double acc = 0.0;
          for (int n = 0; n < s.n; ++n)
            for (int oy = 0; oy < oh; ++oy) {
              const int iy = oy + ky - s.pad;
              if (iy < 0 || iy >= s.h) continue;
              const float* dy_row = dy + idx4(n, co, oy, 0, s.c_out, oh, ow);
              const float* x_row = x + idx4(n, ci, iy, 0, s.c_in, s.h, s.w);
              for (int ox = ox0; ox < ox1; ++ox) acc += static_cast<double>(dy_row[ox]) * x_row[ox + kx - s.pad];
            }
          dweight[idx4(co, ci, ky, kx, s.c_in, k, k)] = static_cast<float>(acc);
        }

  if (dx == nullptr) return;
  // dx[n,ci,iy,ix] = sum over co, ky, kx of dy[n,co,iy+pad-ky,ix+pad-kx] * w[co,ci,ky,kx]
  // (gathered, so each dx is one double sum written once).
  for (int n = 0; n < s.n; ++n)
    for (int ci = 0; ci < s.c_in; ++ci)
      for (int iy = 0; iy < s.h; ++iy)
        for (int ix = 0; ix < s.w; ++ix) {
          double acc = 0.0;
          for (int co = 0; co < s.c_out; ++co)
            for (int ky = 0; ky < k; ++ky) {
              const int oy = iy + s.pad - ky;
              if (oy < 0 || oy >= oh) continue;
              for (int kx = 0; kx < k; ++kx) {
                const int ox = ix + s.pad - kx;
                if (ox < 0 || ox >= ow) continue;
                acc += static_cast<double>(dy[idx4(n, co, oy, ox, s.c_out, oh, ow)]) *
                       weight[idx4(co, ci, ky, kx, s.c_in, k, k)];
              }
            }
          dx[idx4(n, ci, iy, ix, s.c_in, s.h, s.w)] = static_cast<float>(acc);
        }
}

// ---- ReLU ---------------------------------------------------------------------------------

void relu_forward(const float* x, float* y, std::size_t count) { loops::relu_forward(x, y, count); }

void relu_backward(const float* y, const float* dy, float* dx, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

// ---- pooling ------------------------------------------------------------------------------

void maxpool2x2_forward(const PoolShape& s, const float* x, float* y) { loops::maxpool2x2_forward(s, x, y); }

void maxpool2x2_backward(const PoolShape& s, const float* x, const float* dy, float* dx) {
  const int oh = s.out_h(), ow = s.out_w();
  const std::size_t in_plane = static_cast<std::size_t>(s.h) * s.w;
  const std::size_t out_plane = static_cast<std::size_t>(oh) * ow;
  std::fill(dx, dx + static_cast<std::size_t>(s.n) * s.c * in_plane, 0.0f);
  for (std::size_t p = 0; p < static_cast<std::size_t>(s.n) * s.c; ++p) {
    const float* xp = x + p * in_plane;
    float* dxp = dx + p * in_plane;
    const float* dyp = dy + p * out_plane;
    // Windows do not overlap (stride 2), so each dx receives at most one dy.
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox) dxp[loops::window_argmax(xp, s.h, s.w, oy, ox)] = dyp[oy * ow + ox];
  }
}

void avgpool2x2_forward(const PoolShape& s, const float* x, float* y) { loops::avgpool2x2_forward(s, x, y); }

void avgpool2x2_backward(const PoolShape& s, const float* dy, float* dx) {
  const int oh = s.out_h(), ow = s.out_w();
  const std::size_t in_plane = static_cast<std::size_t>(s.h) * s.w;
  const std::size_t out_plane = static_cast<std::size_t>(oh) * ow;
  std::fill(dx, dx + static_cast<std::size_t>(s.n) * s.c * in_plane, 0.0f);
  for (std::size_t p = 0; p < static_cast<std::size_t>(s.n) * s.c; ++p) {
    float* dxp = dx + p * in_plane;
    const float* dyp = dy + p * out_plane;
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox) {
        const loops::Window win(s.h, s.w, oy, ox);
        const float g = static_cast<float>(double(dyp[oy * ow + ox]) / win.count());
        for (int yy = win.y0; yy < win.y1; ++yy)
          for (int xx = win.x0; xx < win.x1; ++xx) dxp[static_cast<std::size_t>(yy) * s.w + xx] = g;
      }
  }
}

void global_avg_pool_forward(int n, int c, int hw, const float* x, float* y) {
  loops::global_avg_pool_forward(n, c, hw, x, y);
}

void global_avg_pool_backward(int n, int c, int hw, const float* dy, float* dx) {
  for (std::size_t p = 0; p < static_cast<std::size_t>(n) * c; ++p) {
    const float g = static_cast<float>(double(dy[p]) / hw);
    for (int i = 0; i < hw; ++i) dx[p * hw + i] = g;
  }
}

// ---- dense --------------------------------------------------------------------------------

void dense_forward(const DenseShape& s, const float* x, const float* weight, const float* bias, float* y) {
  loops::dense_forward(s, x, weight, bias, y);
}

void dense_backward(const DenseShape& s, const float* x, const float* weight, const float* dy, float* dx,
                    float* dweight, float* dbias) {
  for (int o = 0; dbias && o < s.out; ++o) {
    double acc = 0.0;
    for (int n = 0; n < s.n; ++n) acc += dy[static_cast<std::size_t>(n) * s.out + o];
    dbias[o] = static_cast<float>(acc);
  }
  // dweight[o,i] = sum over n of dy[n,o] x[n,i]: one double accumulator row per output.
  std::vector<double> row(static_cast<std::size_t>(s.in));
  for (int o = 0; o < s.out; ++o) {
    std::fill(row.begin(), row.end(), 0.0);
    for (int n = 0; n < s.n; ++n) {
      const double g = dy[static_cast<std::size_t>(n) * s.out + o];
      const float* xr = x + static_cast<std::size_t>(n) * s.in;
      for (int i = 0; i < s.in; ++i) row[i] += g * xr[i];
    }
    float* dwr = dweight + static_cast<std::size_t>(o) * s.in;
    for (int i = 0; i < s.in; ++i) dwr[i] = static_cast<float>(row[i]);
  }
  if (dx == nullptr) return;
  // dx[n,i] = sum over o of dy[n,o] w[o,i].
  for (int n = 0; n < s.n; ++n) {
    std::fill(row.begin(), row.end(), 0.0);
    for (int o = 0; o < s.out; ++o) {
      const double g = dy[static_cast<std::size_t>(n) * s.out + o];
      const float* wr = weight + static_cast<std::size_t>(o) * s.in;
      for (int i = 0; i < s.in; ++i) row[i] += g * wr[i];
    }
    float* dxr = dx + static_cast<std::size_t>(n) * s.in;
    for (int i = 0; i < s.in; ++i) dxr[i] = static_cast<float>(row[i]);
  }
}

// ---- softmax + cross-entropy --------------------------------------------------------------

BatchStats softmax_xent_forward(const float* logits, const uint8_t* labels, int n, int classes) {
  return loops::softmax_xent_forward(logits, labels, n, classes);
}

void softmax_xent_backward(const float* logits, const uint8_t* labels, int n, int classes, float scale,
                           float* dlogits) {
  for (int i = 0; i < n; ++i) {
    loops::check_label(labels[i], classes, i);
    const float* z = logits + static_cast<std::size_t>(i) * classes;
    float* dz = dlogits + static_cast<std::size_t>(i) * classes;
    const double lse = loops::log_sum_exp(z, classes);
    for (int c = 0; c < classes; ++c) {
      const double p = std::exp(static_cast<double>(z[c]) - lse);
      dz[c] = static_cast<float>((p - (c == labels[i] ? 1.0 : 0.0)) * scale);
    }
  }
}

}  // namespace mb::ref

namespace mb {

void normalize_pixels(const uint8_t* pixels, std::size_t count, float* out) {
  for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<float>(pixels[i]) / 255.0f;
}

}  // namespace mb
