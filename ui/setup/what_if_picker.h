// The setup panel's "What if" group: a simulated link (the scenario's SimulatedLink) with its
// presets, for the lesson "why more devices made it slower": communication grows with the model
// (the Model group, model_picker.h, whose gradient it is told) and with a slower link; and a
// remedy (gradient accumulation, a compressed all-reduce) for its second half, "what to do
// about it". Labelled as such
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
  // The remedy, the scenario's fields: gradient accumulation over K micro-batches, or a
  // compressed all-reduce (bf16, fp16); none by default.
  void remedy_into(Scenario& scenario) const;
  void set_remedy(const Scenario& scenario);
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
  Scenario remedy() const;   // the selected remedy's fields over a default scenario
  QComboBox* link_;
  QComboBox* remedy_;
  QPushButton* demo_;
  ModelSpec model_;
  QLabel* note_;
  int replicas_ = 1;
  std::optional<Calibration> calibration_;
};

}  // namespace mb
