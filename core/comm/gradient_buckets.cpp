// DDP-style gradient buckets (see gradient_buckets.h).
#include "comm/gradient_buckets.h"

#include <algorithm>

#include "util/error.h"

namespace mb {

std::vector<GradientBucket> gradient_buckets(const ModelShape& shape, double cap_mb) {
  MB_CHECK(cap_mb > 0, ConfigError, "--bucket-mb must be above 0 MB (got {})", cap_mb);
  const double cap_bytes = cap_mb * 1e6;
  std::vector<GradientBucket> out;
  GradientBucket open;
  bool any = false;
  for (std::size_t i = shape.layers.size(); i-- > 0;) {
    const LayerShape& l = shape.layers[i];
    if (l.param_count == 0) continue;
    // A layer's tensors are contiguous in the flat buffer (weight, then bias).
    std::size_t begin = shape.params[std::size_t(l.weight)].offset, end = begin + shape.params[std::size_t(l.weight)].size;
    if (l.bias >= 0) {
      const ParamTensor& b = shape.params[std::size_t(l.bias)];
      begin = std::min(begin, b.offset);
      end = std::max(end, b.offset + b.size);
    }
    const double bytes = double(end - begin) * sizeof(float);
    if (any && open.bytes() + bytes > cap_bytes) {
      out.push_back(open);
      any = false;
    }
    // Layers are added downwards: the bucket's range grows towards the buffer's start.
    open = any ? GradientBucket{begin, open.end, int(i)} : GradientBucket{begin, end, int(i)};
    any = true;
  }
  if (any) out.push_back(open);
  return out;
}

}  // namespace mb
