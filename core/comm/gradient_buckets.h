// Gradient buckets for overlapping the all-reduce with the backward pass (--bucket-mb), as
// PyTorch DDP forms them (bucket_cap_mb, 25 MB by default): the parameters in reverse layer
// order, the order the backward pass completes their gradients, cut into buckets of at most
// the cap (a layer larger than the cap is a bucket of its own; a layer is never split). A
// bucket can travel once the backward pass has finished its lowest layer.
//
// What overlaps with what (comm/simulated_link.h): a simulated link's wire time, as a NIC's
// DMA would; the reduction arithmetic itself still runs on the replicas' cores after the
// backward pass, in one all-reduce whose sums are the buckets' sums (elementwise, in rank
// order: the same bits as one all-reduce without buckets).
#pragma once
#include <cstddef>
#include <span>
#include <vector>

#include "model/model_shape.h"

namespace mb {

struct GradientBucket {
  std::size_t begin = 0, end = 0;   // floats of the flat gradient buffer
  int ready_layer = 0;              // the layer whose weight gradient completes the bucket
  double bytes() const { return double(end - begin) * sizeof(float); }
};

// Buckets of at most `cap_mb` MB (10^6 bytes), first the one the backward pass fills first.
std::vector<GradientBucket> gradient_buckets(const ModelShape& shape, double cap_mb);

}  // namespace mb
