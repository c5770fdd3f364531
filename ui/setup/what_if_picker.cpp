// What-if group widget: model and simulated-link presets.
#include "model/model_text.h"
#include "setup/what_if_picker.h"

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QLocale>
#include <QVBoxLayout>

#include "setup/note_label.h"
#include "util/bandwidth.h"

namespace mb {
namespace {

// The combo's data for a link: "GBIT:US" (empty: off).
QString link_key(const SimulatedLink& l) {
  return l.gbit > 0 ? QStringLiteral("%1:%2").arg(l.gbit, 0, 'g', 10).arg(l.latency_us, 0, 'g', 10) : QString();
}

// A model's name in the combo, short enough for the setup column; its size is in the item's
// tooltip and the group's note.
QString model_item(const ModelSpec& m) {
  if (m.is_reference()) return WhatIfPicker::tr("reference CNN");
  if (const auto width = reference_family_width(m)) return WhatIfPicker::tr("what-if: dense %1").arg(*width);
  return QString::fromStdString(m.name());
}

// Neither combo's longest item sets the column's width: each is as wide as the column lets
// it be (a dozen characters at the least), and its items are short enough to show whole there.
void fit_to_column(QComboBox* combo) {
  combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  combo->setMinimumContentsLength(12);
}

}  // namespace

WhatIfPicker::WhatIfPicker(QWidget* parent) : QGroupBox(tr("What if (demonstrations)"), parent) {
  setObjectName("what_if_group");
  setToolTip(tr("Why did more devices make training slower? A wider dense layer makes every gradient all-reduce "
                "larger; a slower link makes each byte cost more. Both runs are labelled and never baselines."));
  model_ = new QComboBox(this);
  model_->setObjectName("what_if_model");
  for (const ModelPreset& p : model_presets()) {
    const ModelSpec m = model_from_text(p.name);
    model_->addItem(model_item(m), QString::fromStdString(model_text(m)));
    model_->setItemData(model_->count() - 1, QString::fromUtf8(p.about.data(), qsizetype(p.about.size())), Qt::ToolTipRole);
  }
  fit_to_column(model_);
  model_->setToolTip(tr("The reference CNN, a what-if model whose dense layer is wider (a larger all-reduce), or another "
                        "model (mirrorbench-cli model NAME shows its layers; --model takes any layer list). The "
                        "Reference experiment always trains the reference CNN."));
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
  note_ = note_label(this);
  auto* form = new QFormLayout;
  form->addRow(tr("Model:"), model_);
  form->addRow(tr("Link:"), link_);
  auto* v = new QVBoxLayout(this);
  v->addLayout(form);
  v->addWidget(note_);
  update_note();
  connect(model_, &QComboBox::currentIndexChanged, this, [this] {
    update_note();
    emit changed();
  });
  connect(link_, &QComboBox::currentIndexChanged, this, [this] {
    update_note();
    emit changed();
  });
}

ModelSpec WhatIfPicker::model() const { return model_from_text(model_->currentData().toString().toStdString()); }

SimulatedLink WhatIfPicker::link() const {
  const QStringList parts = link_->currentData().toString().split(':');
  if (parts.size() != 2) return {};
  return {parts[0].toDouble(), parts[1].toDouble()};
}

void WhatIfPicker::set(const ModelSpec& model, const SimulatedLink& link) {
  const QSignalBlocker b1(model_), b2(link_);
  const QString key = QString::fromStdString(model_text(model));
  int m = model_->findData(key);
  if (m < 0) {   // a model from the command line or the settings that no preset is
    model_->addItem(model_item(model), key);
    m = model_->count() - 1;
  }
  model_->setCurrentIndex(m);
  int l = link_->findData(link_key(link));
  if (l < 0) {
    link_->addItem(tr("simulated %1 Gbit/s, %2 µs").arg(link.gbit).arg(link.latency_us), link_key(link));
    l = link_->count() - 1;
  }
  link_->setCurrentIndex(link.gbit > 0 ? l : 0);
  update_note();
}

void WhatIfPicker::update_note() {
  const ModelSpec m = model();
  QString text = tr("%1: %2 parameters, %3 MB per all-reduce.")
                     .arg(QString::fromStdString(m.name()))
                     .arg(QLocale().toString(qlonglong(m.param_count())))
                     .arg(m.gradient_bytes() * 1e-6, 0, 'f', 2);
  if (!m.is_reference()) text += tr(" Not the reference CNN: its runs are compared with its own baselines only.");
  if (const SimulatedLink l = link(); l.gbit > 0)
    text += tr(" Simulated link of %1 Gbit/s and %2 µs: its times are a demonstration, not this machine's.")
                .arg(l.gbit)
                .arg(l.latency_us) +
            link_note();
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
  const double bytes = model().gradient_bytes();
  const double ring = ring_all_reduce_s(bytes, replicas_, link().gbit, link().latency_us);
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
