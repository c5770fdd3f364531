// Progress bar and per-epoch lines for mirrorbench-cli.
#include "progress_printer.h"

#include <unistd.h>

#include <fmt/format.h>

#include "config/train_options.h"
#include "model/model_spec.h"
#include "model/model_text.h"

namespace mb::cli {

ProgressPrinter::ProgressPrinter(std::FILE* out) : out_(out), tty_(isatty(fileno(out)) != 0) {}

void ProgressPrinter::start(const RunConfig& c) {
  const ModelSpec& model = c.model;
  flops_per_image_ = model.train_flops_per_image();
  const std::string where =
      c.processes > 1 ? fmt::format(" in each of {} processes on {}", c.processes, fmt::join(c.hosts, ", ")) : "";
  fmt::print(out_, "mirrorbench {}: {} on {} replica(s) [{}{}{}], backend {}, comm {}\n", c.version, c.dataset,
             c.replicas, c.devices_text(), where, c.simulated ? ", simulated" : "", to_string(c.backend), c.communicator);
  fmt::print(out_, "  model {} ({} parameters, {:.2f} MB per all-reduce){}\n", model.name(), model.param_count(),
             model.gradient_bytes() * 1e-6, model.is_reference() ? "" : ", not the reference CNN");
  fmt::print(out_, "  train {} / val {} images, global batch {} ({} per replica), lr {}, {} epoch(s), seed {}\n",
             c.train_size, c.val_size, c.global_batch, c.per_replica_batch, c.learning_rate, c.epochs, c.seed);
  // The scenario, as the option table describes each field that is on.
  for (const std::string& line : scenario_descriptions(c.scenario)) fmt::print(out_, "  {}\n", line);
  std::fflush(out_);
}

void ProgressPrinter::step(const StepProgress& p) {
  if (!tty_) return;
  constexpr int kWidth = 30;
  const int filled = p.steps > 0 ? static_cast<int>(kWidth * p.step / p.steps) : 0;
  std::string bar(filled, '#');
  bar.resize(kWidth, '.');
  fmt::print(out_, "\r\033[Kepoch {}/{} [{}] {}/{}  {:.1f} s  ETA {:.1f} s  {:.0f} img/s  loss {:.4f}  acc {:.4f}",
             p.epoch, p.epochs, bar, p.step, p.steps, p.epoch_elapsed_s, p.eta_s, p.images_per_s, p.running_loss,
             p.running_acc);
  std::fflush(out_);
  bar_shown_ = true;
}

void ProgressPrinter::epoch(const EpochMetrics& m, int epochs) {
  if (bar_shown_) fmt::print(out_, "\r\033[K");
  bar_shown_ = false;
  const double share = m.time_s > 0 ? 100.0 * m.allreduce_s / m.time_s : 0.0;
  fmt::print(out_,
             "epoch {}/{}  time {:.2f} s  {:.0f} img/s  {:.1f} GFLOP/s  all-reduce {:.1f} %  loss {:.4f}  "
             "acc {:.4f}  val_loss {:.4f}  val_acc {:.4f}\n",
             m.epoch, epochs, m.time_s, m.images_per_s, m.images_per_s * flops_per_image_ * 1e-9, share,
             m.train_loss, m.train_acc, m.val_loss, m.val_acc);
  std::fflush(out_);
}

}  // namespace mb::cli
