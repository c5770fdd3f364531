// The classroom view's texts for one step (see step_picture.h).
#include "teach/step_picture.h"

#include <QLocale>
#include <QObject>
#include <QStringList>

#include <algorithm>
#include <cmath>

#include "backends/devices.h"
#include "util/error.h"

namespace mb {

namespace {

QString number(int64_t n) { return QLocale(QLocale::English).toString(qlonglong(n)); }

// Step phases are milliseconds; a paced step can still show whole seconds of waiting.
QString duration(double s) {
  if (!std::isfinite(s) || s < 0) return QStringLiteral("–");
  if (s >= 1) return QStringLiteral("%1 s").arg(s, 0, 'f', 2);
  const double ms = s * 1000;
  return QStringLiteral("%1 ms").arg(ms, 0, 'f', ms < 10 ? 2 : ms < 100 ? 1 : 0);
}

QString megabytes(double bytes) {
  return bytes >= 1e6 ? QStringLiteral("%1 MB").arg(bytes / 1e6, 0, 'f', 1)
                      : QStringLiteral("%1 MB").arg(bytes / 1e6, 0, 'f', 2);
}

// Where this step sits in its gradient-accumulation window (--accumulate K): micro-batch
// `position` of `size`, the last of which exchanges and updates. The trainer cuts windows by
// the step number alone, so the view can work it out the same way.
struct Window {
  int64_t position = 1, size = 1;
  bool exchanges() const { return position == size; }
};
Window window_of(const StepProgress& p, int accumulate) {
  const int64_t k = std::max(1, accumulate);
  const int64_t w0 = (p.step - 1) / k * k;                 // steps before the window
  return {p.step - w0, std::min(k, p.steps - w0)};          // the epoch's last window may be partial
}

// What a communication remedy changes in the exchange's words (empty: the plain all-reduce).
QString remedy_clause(const Scenario& s, double full_bytes) {
  if (s.powersgd_rank > 0)
    return QObject::tr(", as rank-%1 PowerSGD factors instead of the whole %2 gradient; what they leave out waits "
                       "in each replica's error feedback")
        .arg(s.powersgd_rank)
        .arg(megabytes(full_bytes));
  QString out;
  if (s.allreduce_dtype != WireDtype::Fp32)
    out += QObject::tr(", as %1: 2 bytes per number instead of 4, summed in FP32")
               .arg(QString::fromLatin1(wire_name(s.allreduce_dtype).data()));
  if (s.bucket_mb > 0)
    out += QObject::tr(", in buckets of %1 MB sent while the backward pass still runs").arg(s.bucket_mb, 0, 'g', 3);
  return out;
}

}  // namespace

QString replica_device(const RunConfig& run, int replica) {
  const int per_process = std::max(1, run.replicas_per_process);
  const int process = run.processes > 1 ? replica / per_process : 0;
  const QString in_process =
      run.processes > 1 ? QObject::tr(" · process %1").arg(process) : QString();
  if (run.device_kind() != DeviceKind::Cuda) return QObject::tr("CPU core") + in_process;
  if (uses_local_gpu(run.devices)) return QObject::tr("GPU of process %1").arg(process);
  const DeviceList& specs = run.devices;
  if (specs.empty()) return QObject::tr("GPU") + in_process;
  const DeviceSpec& d = specs[std::size_t((replica % per_process) % int(specs.size()))];
  return QObject::tr("GPU %1").arg(d.index) + (run.simulated ? QObject::tr(" (shared)") : QString()) + in_process;
}

QString label_name(const std::string& dataset, int label) {
  static const char* const kFashion[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                           "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  if (dataset.find("fashion") != std::string::npos && label >= 0 && label < 10) return QString::fromLatin1(kFashion[label]);
  return QObject::tr("digit %1").arg(label);
}

StepPicture describe_step(const StepProgress& p, const RunConfig& run) {
  StepPicture pic;
  if (!p.has_detail) return pic;
  const StepDetail& d = p.detail;
  pic.empty = false;
  const int n = int(d.replicas.size());
  pic.heading = QObject::tr("Epoch %1 of %2 · step %3 of %4").arg(p.epoch).arg(p.epochs).arg(number(p.step), number(p.steps));
  pic.run_text = QStringLiteral("%1 · %2 · %3")
                     .arg(QString::fromStdString(devices_label(run)), QString::fromStdString(run.dataset),
                          QObject::tr("%1 training images").arg(number(run.train_size)));
  pic.global_batch = d.global_batch;
  pic.samples = d.samples;
  pic.batch_text = n == 1 ? QObject::tr("The global batch: %1 images, all for the one replica").arg(number(d.global_batch))
                          : QObject::tr("The global batch: %1 images, split over %2 replicas").arg(number(d.global_batch)).arg(n);
  if (run.scenario.balanced() && n > 1) {
    // Balanced shares: the split follows each replica's measured speed, so it is uneven.
    QStringList shares;
    for (const ReplicaStepDetail& x : d.replicas) shares << number(x.share_count);
    pic.batch_text += QObject::tr(" by their speed (balanced shares: %1)").arg(shares.join(QStringLiteral(" / ")));
  }
  const Window window = window_of(p, run.scenario.accumulate);
  pic.accumulating = run.scenario.accumulate > 1;
  pic.compressed = n > 1 && (run.scenario.powersgd_rank > 0 || run.scenario.allreduce_dtype != WireDtype::Fp32);
  if (window.size > 1)
    pic.batch_text += QObject::tr(" · micro-batch %1 of %2").arg(window.position).arg(window.size);
  if (run.step_delay_s > 0)
    pic.paced_text = QObject::tr("teaching pace: one step every %1 s").arg(run.step_delay_s, 0, 'g', 3);

  double allreduce_s = 0, wait_s = 0;
  for (int r = 0; r < n; ++r) {
    const ReplicaStepDetail& x = d.replicas[std::size_t(r)];
    ReplicaPicture rp;
    rp.name = QObject::tr("Replica %1").arg(r);
    rp.device = replica_device(run, r);
    rp.share_begin = x.share_begin;
    rp.share_count = x.share_count;
    rp.digest = QString::fromStdString(x.digest);
    if (x.share_count > 0) {
      rp.share_text = QObject::tr("images %1–%2 (%3)")
                          .arg(number(x.share_begin + 1), number(x.share_begin + x.share_count), number(x.share_count));
      rp.loss_text = std::isfinite(x.loss) ? QObject::tr("loss %1").arg(x.loss, 0, 'f', 4) : QObject::tr("loss: not a number");
      rp.correct_text = QObject::tr("%1 of %2 right").arg(number(x.correct), number(x.share_count));
    } else {
      // The last, partial batch of an epoch can leave a replica without images: it adds zeros.
      rp.share_text = QObject::tr("no images this step");
      rp.loss_text = QObject::tr("loss: –");
      rp.correct_text = QObject::tr("adds a zero gradient");
    }
    rp.grad_text = std::isfinite(x.grad_norm) ? QObject::tr("gradient norm %1").arg(x.grad_norm, 0, 'g', 4)
                                              : QObject::tr("gradient norm: not measured here");
    const PhaseTimes& t = x.phases;
    const double forward = t[phase::Forward], backward = t[phase::Backward];
    if (forward > 0 || backward > 0)
      rp.compute_text = forward > 0 ? QObject::tr("forward %1 · backward %2").arg(duration(forward), duration(backward))
                                    : QObject::tr("forward + backward %1").arg(duration(backward));
    else
      rp.compute_text = QObject::tr("times: not measured per step here");
    rp.update_text = !window.exchanges()       ? QObject::tr("no update yet (accumulating)")
                     : t[phase::Optimizer] > 0 ? QObject::tr("Adam update %1").arg(duration(t[phase::Optimizer]))
                                               : QObject::tr("Adam update");
    allreduce_s = std::max(allreduce_s, t[phase::AllReduce]);
    wait_s = std::max(wait_s, t[phase::Wait]);
    pic.replicas.push_back(std::move(rp));
  }

  if (!window.exchanges()) {
    pic.allreduce_text = QObject::tr("No exchange yet: gradient accumulation adds this micro-batch's gradient to "
                                     "each replica's sum; the all-reduce and the update come after micro-batch %1")
                             .arg(window.size);
  } else if (n < 2) {
    pic.allreduce_text = QObject::tr("All-reduce: only one replica, nothing to exchange");
  } else {
    const QString what = window.size > 1 ? QObject::tr("the %1 gradients, each summed over %2 micro-batches, are summed")
                                               .arg(n)
                                               .arg(window.size)
                                         : QObject::tr("the %1 gradients are summed").arg(n);
    pic.allreduce_text = QObject::tr("All-reduce: %1. Each replica sends and receives %2 bytes (%3)%4 in %5")
                             .arg(what, number(int64_t(std::llround(d.allreduce_bytes))), megabytes(d.allreduce_bytes),
                                  remedy_clause(run.scenario, run.model.gradient_bytes()), duration(allreduce_s));
    if (wait_s >= 0.0005) pic.allreduce_text += QObject::tr(", after waiting %1 for the slowest").arg(duration(wait_s));
  }

  QStringList differ;
  const QString first = n > 0 ? pic.replicas.front().digest : QString();
  for (const auto& rp : pic.replicas)
    if (rp.digest.isEmpty() || rp.digest != first) differ << rp.name;
  pic.identical = n > 0 && !first.isEmpty() && differ.isEmpty();
  if (pic.identical)
    pic.verdict_text = n == 1   ? QObject::tr("The update: parameters %1").arg(first)
                       : n == 2 ? QObject::tr("Identical: both replicas hold exactly the same parameters (digest %1)")
                                      .arg(first)
                                : QObject::tr("Identical: all %1 replicas hold exactly the same parameters (digest %2)")
                                      .arg(n)
                                      .arg(first);
  else
    pic.verdict_text = QObject::tr("Not identical: %1 %2 different parameters from replica 0")
                           .arg(differ.join(QStringLiteral(", ")), differ.size() == 1 ? QObject::tr("has") : QObject::tr("have"));
  return pic;
}

const std::vector<GlossaryEntry>& step_glossary() {
  static const std::vector<GlossaryEntry> entries = {
      {QObject::tr("replica"),
       QObject::tr("A full copy of the model on one device (a CPU core or a GPU). Every replica trains on its own "
                   "share of the batch, and all of them stay identical.")},
      {QObject::tr("global batch"),
       QObject::tr("The images of one training step, all replicas together. It is split into one share per replica.")},
      {QObject::tr("share"), QObject::tr("The part of the global batch one replica works on in this step.")},
      {QObject::tr("forward"), QObject::tr("Forward pass: the model looks at its images and gives its answers.")},
      {QObject::tr("backward"),
       QObject::tr("Backward pass: from the answers and the true labels, work out how every parameter should change "
                   "(the gradient).")},
      {QObject::tr("loss"),
       QObject::tr("How wrong the answers are on these images (cross-entropy): lower is better. Each replica only "
                   "knows the loss of its own share.")},
      {QObject::tr("gradient"),
       QObject::tr("One number per parameter of the model (the Model group counts them) saying which way to change "
                   "it to lower the loss. Each replica computes one from its own share.")},
      {QObject::tr("gradient norm"),
       QObject::tr("The length of a replica's own gradient before the exchange: how strongly its share pushes the "
                   "model. Different shares push differently.")},
      {QObject::tr("all-reduce"),
       QObject::tr("The exchange: every replica sends its gradient and receives the sum of all of them, so afterwards "
                   "every replica holds the same total gradient.")},
      {QObject::tr("bytes"),
       QObject::tr("The gradient is one 4-byte number per parameter (the Model group's MB per all-reduce): that is "
                   "what every replica sends and receives in each step.")},
      {QObject::tr("gradient accumulation"),
       QObject::tr("A remedy for slow exchanges: each replica adds up the gradients of several micro-batches and the "
                   "replicas exchange and update once for all of them, so there are fewer all-reduces per image. The "
                   "batch the update sees grows by the same factor.")},
      {QObject::tr("compression"),
       QObject::tr("A remedy for slow exchanges: fewer bytes travel. bf16 or fp16 send each number in 2 bytes instead "
                   "of 4 (rounded); PowerSGD sends each weight matrix as two thin factors and keeps what they leave "
                   "out for the next step. Every replica still receives the same values.")},
      {QObject::tr("Adam update"),
       QObject::tr("The optimizer (Adam) moves every parameter a little along the summed gradient. Same start, same "
                   "gradient: the same result on every replica.")},
      {QObject::tr("digest"),
       QObject::tr("A fingerprint (hash) of all the parameters after the update. Equal fingerprints mean the "
                   "models are equal bit for bit.")},
      {QObject::tr("identical"),
       QObject::tr("Every replica's parameter fingerprint is the same: the mirrored copies did not drift apart. This "
                   "is what MirroredStrategy guarantees.")},
      {QObject::tr("teaching pace"),
       QObject::tr("The run waits so that each step lasts about a second and can be followed; its times are not the "
                   "machine's speed.")},
  };
  return entries;
}

QString explain(const QString& term) {
  for (const auto& e : step_glossary())
    if (e.term == term) return e.explanation;
  return {};
}

}  // namespace mb
