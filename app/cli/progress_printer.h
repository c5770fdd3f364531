// Terminal output of a training run: a live progress bar with ETA and images/s when stdout
// is a terminal, plain lines (one per epoch) otherwise, so logs and pipes stay clean.
#pragma once
#include <cstdio>

#include "records/run_record.h"
#include "trainer/train_observer.h"

namespace mb::cli {

class ProgressPrinter {
 public:
  explicit ProgressPrinter(std::FILE* out);
  void start(const RunConfig& config);
  void step(const StepProgress& p);
  void epoch(const EpochMetrics& m, int epochs);

 private:
  std::FILE* out_;
  bool tty_;
  double flops_per_image_ = 0;   // the run's model's (start)
  bool bar_shown_ = false;
};

}  // namespace mb::cli
