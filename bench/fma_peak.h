// One core's FP32 multiply-add peak on the current Highway target (see fma_peak.cpp).
#pragma once

namespace mb::bench {

// Best rate over `seconds` of measuring, in GFLOP/s (a multiply-add counts 2).
double fma_peak_gflops(double seconds);

}  // namespace mb::bench
