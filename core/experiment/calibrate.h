// The scaling predictor's measurements on this machine, in well under a minute: the
// lock-step compute of k CPU replicas at several per-replica batches, and a size sweep of the
// thread all-reduce among n ranks (nccl-tests style: time, algbw, busbw per size). Synthetic
// images: timing does not depend on their values.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "experiment/scaling_model.h"

namespace mb {

struct CalibrateOptions {
  std::string backend = "auto";                 // CPU kernels (auto: oneDNN)
  std::vector<int64_t> batches = {16, 32, 64, 128};
  int max_concurrency = 0;                      // 0: every physical core
  int steps = 10;                               // timed lock-step steps per round (3 rounds per point)
  int64_t train_size = 60000;                   // the epoch the predictions are for
};

// Throws ConfigError for impossible options. `progress` (may be empty) hears one line per point.
Calibration calibrate_cpu(const CalibrateOptions& options,
                          const std::function<void(const std::string&)>& progress = {});

}  // namespace mb
