// A compressed gradient all-reduce (--allreduce-dtype bf16|fp16): wraps a host communicator so
// that the gradients travel in 16 bits, half of FP32's bytes (horovod's Compression.fp16,
// PyTorch DDP's fp16/bf16_compress_hook). What each replica sends is its gradient rounded to
// the wire type; the sums are FP32, in rank order, as without compression; what comes back is
// the sum rounded to the wire type. So every replica receives the same bits and replicas stay
// bit-identical; what changes against FP32 is the two roundings.
//
// fp16 carries 5 exponent bits (2^-24 .. 65504): the gradients are pre-scaled by a power of two
// (exact) chosen from the largest magnitude over all replicas, so that the sum of N of them
// cannot overflow and the small ones keep the range's most digits instead of underflowing; the
// scale is undone after the exchange. bf16 keeps FP32's range and needs no scale.
//
// The wrapper reports 2 bytes per value (all_reduce_wire_bytes) to a simulated link around it
// and to the breakdown; between processes the link really sends 16-bit values (MPI:
// MpiLink::all_reduce_sum_as); in one process's shared memory nothing travels at all.
#pragma once
#include <memory>
#include <span>

#include "comm/communicator.h"
#include "config/scenario.h"

namespace mb {

std::unique_ptr<Communicator> make_compressed_all_reduce(std::unique_ptr<Communicator> inner, WireDtype wire);

// The power-of-two pre-scale of an fp16 exchange among `ranks` replicas whose largest gradient
// magnitude is `largest` (over all of them): the largest sum, ranks x largest x scale, stays
// within fp16's 65504. 1 when there is nothing to scale (zero, infinity, NaN).
float fp16_prescale(float largest, int ranks);

}  // namespace mb
