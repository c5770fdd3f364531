// Run records made by hand for tests of what reads them (sweeps, charts, cards).
#pragma once
#include <initializer_list>
#include <utility>
#include <vector>

#include "records/run_record.h"

namespace mb::test {

// One epoch per (seconds, validation accuracy) pair, numbered from 1.
inline std::vector<EpochMetrics> epoch_history(std::initializer_list<std::pair<double, double>> time_and_val_acc) {
  std::vector<EpochMetrics> epochs;
  for (auto [t, acc] : time_and_val_acc) {
    EpochMetrics m;
    m.epoch = int(epochs.size()) + 1;
    m.time_s = t;
    m.val_acc = acc;
    epochs.push_back(m);
  }
  return epochs;
}

}  // namespace mb::test
