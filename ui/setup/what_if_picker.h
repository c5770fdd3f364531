// The setup panel's "What if" group: a simulated link (the scenario's SimulatedLink) with its
// presets, for the lesson "why more devices made it slower": communication grows with the model
// (the Model group, model_picker.h, whose gradient it is told) and with a slower link; and the
// remedy, gradient accumulation, for its second half, "what to do about it". Labelled as such
// wherever such a run shows; this machine's own exchange, every step, is the default.
#pragma once
#include <QGroupBox>

#include <optional>

#include "comm/simulated_link.h"
#include "experiment/scaling_model.h"
#include "model/model_spec.h"

class QComboBox;
class QPushButton;
class QLabel;

namespace mb {

class WhatIfPicker : public QGroupBox {
  Q_OBJECT
 public:
  explicit WhatIfPicker(QWidget* parent = nullptr);

  SimulatedLink link() const;   // gbit 0: off
  void set_link(const SimulatedLink& link);
  // The remedy: gradient accumulation over K micro-batches (1: none), the scenario's field.
  int accumulate() const;
  void set_accumulate(int k);
  // The model whose gradient the link would carry (the Model group's).
  void set_model(const ModelSpec& model);
  // What the note compares a simulated link with: the replicas the run would exchange among,
  // and this machine's calibrated all-reduce (nullptr: not calibrated yet).
  void set_replicas(int replicas);
  void set_calibration(const Calibration* calibration);

 signals:
  void changed();
  void bare_vs_remedy_clicked();   // the demonstration: the run bare, then with the remedy

 private:
  void update_note();
  QString link_note() const;
  QComboBox* link_;
  QComboBox* remedy_;
  QPushButton* demo_;
  ModelSpec model_;
  QLabel* note_;
  int replicas_ = 1;
  std::optional<Calibration> calibration_;
};

}  // namespace mb
