// Rank 0's running account of a run (see primary_book.h).
#include "trainer/primary_book.h"

#include <algorithm>

#include <fmt/format.h>

#include "comm/powersgd.h"
#include "comm/wire_format.h"
#include "model/model_spec.h"
#include "model/model_text.h"
#include "util/digest.h"

namespace mb {
namespace {

constexpr std::size_t kRecentReports = 6;   // the live timeline's steps
constexpr std::size_t kDetailSamples = 256;
constexpr double kReportInterval_s = 0.05;   // progress at most this often (detailed steps always)

double seconds_since(PrimaryBook::Clock::time_point t0) {
  return std::chrono::duration<double>(PrimaryBook::Clock::now() - t0).count();
}

double mean_loss(const BatchStats& s) { return s.loss_sum / double(std::max<int64_t>(1, s.samples)); }
double accuracy(const BatchStats& s) { return double(s.correct) / double(std::max<int64_t>(1, s.samples)); }

}  // namespace

void PrimaryBook::begin_epoch(int epoch) {
  epoch_ = epoch;
  running_ = {};
  last_report_ = -1;
  replica_times_.assign(std::size_t(rc_.replicas), PhaseTimes{});
  epoch_start_ = Clock::now();
}

double PrimaryBook::epoch_elapsed_s() const { return seconds_since(epoch_start_); }

void PrimaryBook::add(const std::vector<StepReport>& all, int64_t steps_done, int64_t images_done,
                      std::span<const int32_t> step_samples) {
  std::vector<PhaseTimes> report(all.size());
  for (std::size_t r = 0; r < all.size(); ++r) {
    running_ += all[r].stats;
    replica_times_[r] += all[r].times;
    report[r] = all[r].times;
  }
  if (recent_.size() == kRecentReports) recent_.erase(recent_.begin());
  recent_.push_back(std::move(report));
  const double elapsed = seconds_since(epoch_start_);
  const bool detailed = all.front().detailed != 0;
  if (!observer_.on_step || (elapsed - last_report_ < kReportInterval_s && steps_done != steps_ && !detailed)) return;
  last_report_ = elapsed;
  StepProgress p;
  p.epoch = epoch_, p.epochs = rc_.epochs, p.step = steps_done, p.steps = steps_;
  p.images_done = images_done;
  p.epoch_elapsed_s = elapsed;
  p.images_per_s = elapsed > 0 ? double(images_done) / elapsed : 0;
  p.eta_s = p.images_per_s > 0 ? double(rc_.train_size - images_done) / p.images_per_s : 0;
  p.running_loss = mean_loss(running_);
  p.running_acc = accuracy(running_);
  p.recent = recent_;
  p.steps_per_report = steps_per_report_;
  p.epoch_times = replica_times_;
  if (detailed) {
    p.has_detail = true;
    p.detail = detail_of(all, step_samples);
  }
  observer_.on_step(p);
}

StepDetail PrimaryBook::detail_of(const std::vector<StepReport>& all, std::span<const int32_t> step_samples) const {
  StepDetail d;
  d.global_batch = int64_t(step_samples.size());
  d.samples.assign(step_samples.begin(), step_samples.begin() + std::min(step_samples.size(), kDetailSamples));
  d.allreduce_bytes = gradient_wire_bytes(rc_.model.shape(), rc_.scenario);
  for (const StepReport& r : all) {
    ReplicaStepDetail x;
    x.share_begin = r.share_begin;
    x.share_count = r.share_count;
    x.loss = r.share_count > 0 ? r.step_stats.loss_sum / double(r.step_stats.samples) : 0;
    x.correct = r.step_stats.correct;
    x.grad_norm = r.grad_norm;
    x.digest = digest_hex(r.digest);
    x.phases = r.step_times;
    d.replicas.push_back(std::move(x));
  }
  return d;
}

void PrimaryBook::end_epoch(double time_s, const std::vector<EpochReport>& all) {
  EpochMetrics m;
  m.epoch = epoch_;
  m.time_s = time_s;
  m.allreduce_s = replica_times_[0][phase::AllReduce] + replica_times_[0][phase::Wait];
  m.train_loss = mean_loss(running_);
  m.train_acc = accuracy(running_);
  m.images_per_s = double(running_.samples) / std::max(1e-9, time_s);
  BatchStats v;
  for (const auto& r : all) v += r.val;
  m.val_loss = mean_loss(v);
  m.val_acc = accuracy(v);
  m.replica_times = replica_times_;
  m.param_digest = digest_hex(all[0].digest);
  record_.epoch_ended(m);
  log_line(observer_, LogLevel::Info,
           fmt::format("epoch {}/{}: {:.2f} s ({:.0f} img/s, all-reduce {:.1f} %), loss {:.4f}, acc {:.4f}, "
                       "val_loss {:.4f}, val_acc {:.4f}",
                       m.epoch, rc_.epochs, m.time_s, m.images_per_s, 100.0 * m.allreduce_s / std::max(1e-9, m.time_s),
                       m.train_loss, m.train_acc, m.val_loss, m.val_acc));
  if (observer_.on_epoch) observer_.on_epoch(m);
}

}  // namespace mb
