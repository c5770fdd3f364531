// Short training runs for the trainer's tests: a small request and how far two parameter
// buffers are apart.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/train_config.h"

namespace mb::test {

// `devices` with the backend named by `backend` ("auto": the registry's choice), one epoch,
// seed 3, global batch `batch`.
inline TrainConfig small_config(const std::string& devices, std::string_view backend, int64_t batch = 64) {
  TrainConfig c;
  c.devices = parse_devices(devices);
  c.backend = parse_backend(backend);
  c.batch = batch;
  c.epochs = 1;
  c.seed = 3;
  return c;
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::fabs(a[i] - b[i])));
  return worst;
}

}  // namespace mb::test
