// The scaling predictor's measurements on this machine, in well under a minute: the
// lock-step compute of k CPU replicas at several per-replica batches, and a size sweep of the
// thread all-reduce among n ranks (nccl-tests style: time, algbw, busbw per size). Synthetic
// images: timing does not depend on their values.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include <vector>

#include "config/backend.h"
#include "experiment/scaling_model.h"
#include "model/model_spec.h"

namespace mb {

struct CalibrateOptions {
  BackendChoice backend;                        // CPU kernels (auto: the registry's preferred, oneDNN)
  ModelSpec model;                              // what is timed; the all-reduce sweep reaches its gradient
  std::vector<int64_t> batches = {16, 32, 64, 128};
  int max_concurrency = 0;                      // 0: every physical core
  int steps = 10;                               // at least this many timed lock-step steps per round
  // ... and at least this many images per replica per round (~0.3 s here), so that a round
  // lasts long enough to average a shared host's short stalls; 5 rounds per point, the median kept.
  int64_t round_images = 3072;
  int64_t train_size = 60000;                   // the epoch the predictions are for
};

// Throws ConfigError for impossible options. `progress` (may be empty) hears one line per point.
Calibration calibrate_cpu(const CalibrateOptions& options,
                          const std::function<void(const std::string&)>& progress = {});

}  // namespace mb
