// Simulated straggler group widget.
#include "setup/straggler_picker.h"

#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>

#include "setup/note_label.h"

namespace mb {

StragglerPicker::StragglerPicker(QWidget* parent) : QGroupBox(tr("Simulated straggler"), parent) {
  setObjectName("straggler_group");
  setCheckable(true);
  setChecked(false);
  setToolTip(tr("A demonstration: one CPU replica computes slower, as a slow or busy device would. Lock-step training "
                "waits for it at every all-reduce; the breakdown shows the others' waiting grow"));
  replica_ = new QSpinBox(this);
  replica_->setObjectName("straggler_replica");
  replica_->setRange(0, 1);
  replica_->setValue(1);
  replica_->setPrefix(tr("replica "));
  factor_ = new QDoubleSpinBox(this);
  factor_->setObjectName("straggler_factor");
  factor_->setRange(1.0, 100.0);
  factor_->setDecimals(1);
  factor_->setSingleStep(0.5);
  factor_->setValue(3.0);   // the README's demonstration: replica 1, 3x slower
  factor_->setSuffix(QStringLiteral("\u00d7"));
  note_ = note_label(this);
  note_->setText(tr("Its compute takes that many times as long; every run with it is labelled “simulated straggler” "
                    "and is never anyone's baseline."));
  auto* row = new QHBoxLayout;
  row->addWidget(replica_);
  row->addWidget(new QLabel(tr("computes"), this));
  row->addWidget(factor_);
  row->addWidget(new QLabel(tr("slower"), this));
  row->addStretch(1);
  // One click for the demonstration's answer: the same run lock-step, then with balanced
  // shares (the slow replica's share shrinks, the others stop waiting), side by side.
  demo_ = new QPushButton(tr("Lock-step vs balanced"), this);
  demo_->setObjectName("lock_step_vs_balanced_button");
  demo_->setToolTip(tr("Run these settings twice, back to back: lock-step (every replica an even share, all "
                       "waiting for the slowest) and with balanced shares (each share follows its replica's speed)"));
  auto* v = new QVBoxLayout(this);
  v->addLayout(row);
  v->addWidget(note_);
  v->addWidget(demo_, 0, Qt::AlignLeft);
  // The note stays whether the group is ticked or not (greyed with the fields when not), so
  // ticking it moves nothing below.
  connect(demo_, &QPushButton::clicked, this, &StragglerPicker::lock_step_vs_balanced_clicked);

  connect(this, &QGroupBox::toggled, this, [this](bool on) {
    demo_->setEnabled(demo_allowed_ && on);
    emit changed();
  });
  connect(replica_, &QSpinBox::valueChanged, this, &StragglerPicker::changed);
  connect(factor_, &QDoubleSpinBox::valueChanged, this, &StragglerPicker::changed);
}

Straggler StragglerPicker::straggler() const {
  return isChecked() ? Straggler{replica_->value(), factor_->value()} : Straggler{};
}

void StragglerPicker::set(const Straggler& straggler) {
  const int slow_replica = straggler.replica;
  const double slow_factor = straggler.factor;
  const QSignalBlocker b1(this), b2(replica_), b3(factor_);
  setChecked(slow_replica >= 0);
  if (slow_replica >= 0) {
    replica_->setMaximum(std::max(replica_->maximum(), slow_replica));
    replica_->setValue(slow_replica);
    factor_->setValue(std::clamp(slow_factor, 1.0, 100.0));
  }
}

// Only with the straggler ticked (the group's own rule for its children), and a runnable request.
void StragglerPicker::set_demo_enabled(bool enabled) {
  demo_allowed_ = enabled;
  demo_->setEnabled(demo_allowed_ && isChecked());
}

void StragglerPicker::set_replicas(int replicas) {
  // Never below 0..1: a replica chosen before the devices shrink stays visible, and the panel
  // explains why it cannot run.
  const int keep = replica_->value();
  const QSignalBlocker b(replica_);
  replica_->setMaximum(std::max({1, replicas - 1, isChecked() ? keep : 0}));
}

}  // namespace mb
