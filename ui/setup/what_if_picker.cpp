// What-if group widget: the simulated link's presets and the remedy.
#include "setup/what_if_picker.h"

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QVBoxLayout>

#include <algorithm>
#include <vector>

#include "comm/gradient_buckets.h"
#include "comm/powersgd.h"
#include "comm/wire_format.h"
#include "setup/note_label.h"
#include "util/bandwidth.h"

namespace mb {
namespace {

// The combo's data for a link: "GBIT:US" (empty: off).
QString link_key(const SimulatedLink& l) {
  return l.gbit > 0 ? QStringLiteral("%1:%2").arg(l.gbit, 0, 'g', 10).arg(l.latency_us, 0, 'g', 10) : QString();
}

// A remedy: the scenario's remedy fields over a default scenario.
Scenario remedy_of(int accumulate, WireDtype wire, double bucket_mb, int powersgd_rank = 0) {
  Scenario s;
  s.accumulate = accumulate;
  s.allreduce_dtype = wire;
  s.bucket_mb = bucket_mb;
  s.powersgd_rank = powersgd_rank;
  return s;
}

// The remedy combo's data: "none", or "accumulate:K", "wire:bf16", "powersgd:R" and "bucket:MB"
// joined by '+'.
QString remedy_key(const Scenario& s) {
  QStringList parts;
  if (s.accumulate > 1) parts << QStringLiteral("accumulate:%1").arg(s.accumulate);
  if (s.allreduce_dtype != WireDtype::Fp32)
    parts << QStringLiteral("wire:%1").arg(QString::fromLatin1(wire_name(s.allreduce_dtype).data()));
  if (s.powersgd_rank > 0) parts << QStringLiteral("powersgd:%1").arg(s.powersgd_rank);
  if (s.bucket_mb > 0) parts << QStringLiteral("bucket:%1").arg(s.bucket_mb, 0, 'g', 10);
  return parts.isEmpty() ? QStringLiteral("none") : parts.join('+');
}

QString remedy_label(const Scenario& s) {
  QStringList parts;
  if (s.accumulate > 1) parts << QObject::tr("accumulate %1 batches").arg(s.accumulate);
  if (s.allreduce_dtype != WireDtype::Fp32)
    parts << QObject::tr("%1 all-reduce").arg(QString::fromLatin1(wire_name(s.allreduce_dtype).data()));
  if (s.powersgd_rank > 0) parts << QObject::tr("PowerSGD rank %1").arg(s.powersgd_rank);
  if (s.bucket_mb > 0) parts << QObject::tr("overlap, %1 MB buckets").arg(s.bucket_mb);
  return parts.isEmpty() ? QObject::tr("none: FP32 all-reduce every step") : parts.join(QStringLiteral(", "));
}

// Neither combo's longest item sets the column's width: each is as wide as the column lets
// it be (a dozen characters at the least), and its items are short enough to show whole there.
void fit_to_column(QComboBox* combo) {
  combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  combo->setMinimumContentsLength(12);
}

}  // namespace

WhatIfPicker::WhatIfPicker(QWidget* parent) : QGroupBox(tr("What if (demonstration)"), parent) {
  setObjectName("what_if_group");
  setToolTip(tr("Why did more devices make training slower? A larger model makes every gradient all-reduce "
                "larger (the Model group); a slower link makes each byte cost more. Such runs are labelled and "
                "never baselines."));
  link_ = new QComboBox(this);
  link_->setObjectName("what_if_link");
  link_->addItem(tr("off: this machine's own exchange"), QString());
  for (const LinkPreset& p : link_presets()) {
    link_->addItem(tr("simulated %1").arg(QString::fromUtf8(p.label)), link_key(p.link));
    link_->setItemData(link_->count() - 1,
                       tr("%1 Gbit/s, %2 µs (%3)").arg(p.link.gbit).arg(p.link.latency_us).arg(QString::fromUtf8(p.source)),
                       Qt::ToolTipRole);
  }
  fit_to_column(link_);
  link_->setToolTip(tr("CPU replicas only: each gradient all-reduce lasts at least what a ring over such links would "
                       "take (2(n−1)/n · bytes / bandwidth + 2(n−1) · latency), counted as communication. A link faster "
                       "than this machine's own exchange changes nothing here."));
  remedy_ = new QComboBox(this);
  remedy_->setObjectName("what_if_remedy");
  std::vector<Scenario> remedies{Scenario{}};
  for (int k : {2, 4, 8, 16}) remedies.push_back(remedy_of(k, WireDtype::Fp32, 0));
  for (WireDtype w : {WireDtype::Bf16, WireDtype::Fp16}) remedies.push_back(remedy_of(1, w, 0));
  for (int rank : {4, 1}) remedies.push_back(remedy_of(1, WireDtype::Fp32, 0, rank));   // the paper's, and the least
  for (double mb : {25.0, 1.0}) remedies.push_back(remedy_of(1, WireDtype::Fp32, mb));   // DDP's default, and small
  for (const Scenario& r : remedies) remedy_->addItem(remedy_label(r), remedy_key(r));
  fit_to_column(remedy_);
  remedy_->setToolTip(tr("Gradient accumulation: one all-reduce and one optimizer step every K batches, so K times "
                         "fewer exchanges; the effective batch is K times larger (Scale with replicas scales the rate "
                         "with it), which can cost accuracy.\nCompressed all-reduce: the gradients travel as 16-bit "
                         "bf16 or fp16, half the bytes, rounded on the way, which can cost accuracy.\nPowerSGD: each weight "
                         "matrix travels as two thin rank-R factors, a small part of its bytes, with error feedback "
                         "(Vogels et al. 2019), which can cost accuracy.\nOverlap: the "
                         "all-reduce starts bucket by bucket while the backward pass still runs, so a link's wire "
                         "time hides under it (PyTorch DDP's buckets, 25 MB by default); the same sums, so it costs "
                         "no accuracy. All run on CPU replicas."));
  note_ = note_label(this);
  auto* form = new QFormLayout;
  form->addRow(tr("Link:"), link_);
  form->addRow(tr("Remedy:"), remedy_);
  demo_ = new QPushButton(tr("Bare vs remedy"), this);
  demo_->setObjectName("bare_vs_remedy_button");
  demo_->setToolTip(tr("Two runs of these settings back to back: bare (an all-reduce every step), then with the "
                       "remedy; the charts and the card show the time each took and the accuracy each reached"));
  demo_->setEnabled(false);
  connect(demo_, &QPushButton::clicked, this, &WhatIfPicker::bare_vs_remedy_clicked);
  auto* v = new QVBoxLayout(this);
  v->addLayout(form);
  v->addWidget(demo_, 0, Qt::AlignLeft);
  v->addWidget(note_);
  update_note();
  connect(link_, &QComboBox::currentIndexChanged, this, [this] {
    update_note();
    emit changed();
  });
  connect(remedy_, &QComboBox::currentIndexChanged, this, [this] {
    update_note();
    emit changed();
  });
}

Scenario WhatIfPicker::remedy() const {
  Scenario s;
  for (const QString& part : remedy_->currentData().toString().split('+')) {
    if (part.startsWith("accumulate:")) s.accumulate = std::max(1, part.mid(11).toInt());
    for (WireDtype w : {WireDtype::Bf16, WireDtype::Fp16})
      if (part == QString("wire:%1").arg(wire_name(w).data())) s.allreduce_dtype = w;
    if (part.startsWith("bucket:")) s.bucket_mb = std::max(0.0, part.mid(7).toDouble());
    if (part.startsWith("powersgd:")) s.powersgd_rank = std::max(0, part.mid(9).toInt());
  }
  return s;
}

void WhatIfPicker::remedy_into(Scenario& scenario) const {
  scenario.take_remedy(remedy());
}

void WhatIfPicker::set_remedy(const Scenario& scenario) {
  const QSignalBlocker b(remedy_);
  const Scenario r = scenario.remedy();
  const QString key = remedy_key(r);
  int i = remedy_->findData(key);
  if (i < 0) {   // a combination from a command line or a record: shown as it is
    remedy_->addItem(remedy_label(r), key);
    i = remedy_->count() - 1;
  }
  remedy_->setCurrentIndex(i);
  update_note();
}

SimulatedLink WhatIfPicker::link() const {
  const QStringList parts = link_->currentData().toString().split(':');
  if (parts.size() != 2) return {};
  return {parts[0].toDouble(), parts[1].toDouble()};
}

void WhatIfPicker::set_link(const SimulatedLink& link) {
  const QSignalBlocker b(link_);
  int l = link_->findData(link_key(link));
  if (l < 0) {
    link_->addItem(tr("simulated %1 Gbit/s, %2 µs").arg(link.gbit).arg(link.latency_us), link_key(link));
    l = link_->count() - 1;
  }
  link_->setCurrentIndex(link.gbit > 0 ? l : 0);
  update_note();
}

void WhatIfPicker::set_model(const ModelSpec& model) {
  if (model == model_) return;
  model_ = model;
  update_note();
}

void WhatIfPicker::update_note() {
  const Scenario r = remedy();
  demo_->setEnabled(r.comm_remedy());
  const SimulatedLink l = link();
  QString text = l.gbit <= 0 ? tr("Off: the gradient's %1 MB per step travel as fast as this machine moves them.")
                                   .arg(model_.gradient_bytes() * 1e-6, 0, 'f', 2)
                             : tr("Simulated link of %1 Gbit/s and %2 µs: its times are a demonstration, not this "
                                  "machine's.")
                                       .arg(l.gbit)
                                       .arg(l.latency_us) +
                                   link_note();
  const double mb = gradient_wire_bytes(model_.shape(), r) * 1e-6;
  if (const int k = r.accumulate; k > 1)
    text += tr(" Accumulating %1 batches: one all-reduce of %2 MB every %1 steps, and an effective batch %1 times "
               "larger.")
                .arg(k)
                .arg(mb, 0, 'f', 2);
  else if (r.allreduce_dtype != WireDtype::Fp32)
    text += tr(" %1 all-reduce: %2 MB per step on the wire instead of %3, each gradient rounded to 16 bits.")
                .arg(QString::fromLatin1(wire_name(r.allreduce_dtype).data()))
                .arg(mb, 0, 'f', 2)
                .arg(model_.gradient_bytes() * 1e-6, 0, 'f', 2);
  else if (r.powersgd_rank > 0)
    text += tr(" PowerSGD rank %1: %2 MB per step on the wire instead of %3, in two exchanges of the weight "
               "matrices' factors; what the factors leave out is carried to the next step.")
                .arg(r.powersgd_rank)
                .arg(mb, 0, 'f', 3)
                .arg(model_.gradient_bytes() * 1e-6, 0, 'f', 2);
  else if (r.bucket_mb > 0)
    text += tr(" Overlap: the %1 MB travel in %2 bucket(s) of at most %3 MB, each as soon as the backward pass "
               "has computed it; what the link takes beyond that is exposed.")
                .arg(mb, 0, 'f', 2)
                .arg(gradient_buckets(model_.shape(), r.bucket_mb).size())
                .arg(r.bucket_mb);
  note_->setText(text);
}

void WhatIfPicker::set_replicas(int replicas) {
  if (replicas == replicas_) return;
  replicas_ = replicas;
  update_note();
}

void WhatIfPicker::set_calibration(const Calibration* calibration) {
  calibration_ = calibration ? std::optional<Calibration>(*calibration) : std::nullopt;
  update_note();
}

// The simulated link against this machine's own exchange of the model's gradient among the
// run's replicas: a link faster than that changes nothing (the all-reduce lasts the longer).
QString WhatIfPicker::link_note() const {
  if (replicas_ < 2) return tr(" One replica exchanges nothing: pick two or more devices to see it.");
  const double bytes = model_.gradient_bytes();   // this machine's own exchange: FP32 in memory
  const double ring =
      ring_all_reduce_s(gradient_wire_bytes(model_.shape(), remedy()), replicas_, link().gbit, link().latency_us);
  if (!calibration_ || calibration_->allreduce.empty())
    return tr(" Such a link takes %1 ms per all-reduce among %2 replicas; Calibrate (Where the time goes) to "
              "compare it with this machine's own exchange.")
        .arg(ring * 1e3, 0, 'g', 3)
        .arg(replicas_);
  const double own = predicted_allreduce_s(*calibration_, replicas_, bytes);
  if (ring <= own)
    return tr(" It changes nothing here: such a link takes %1 ms per all-reduce among %2 replicas, this machine's "
              "own exchange %3 ms already (calibrated).")
        .arg(ring * 1e3, 0, 'g', 3)
        .arg(replicas_)
        .arg(own * 1e3, 0, 'g', 3);
  return tr(" It sets the exchange's pace: %1 ms per all-reduce among %2 replicas, where this machine's own "
            "exchange takes %3 ms (calibrated).")
      .arg(ring * 1e3, 0, 'g', 3)
      .arg(replicas_)
      .arg(own * 1e3, 0, 'g', 3);
}

}  // namespace mb
