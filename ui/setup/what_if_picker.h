// The setup panel's "What if" group: a what-if model (the dense width, TrainConfig::model) and a
// simulated link (the scenario's SimulatedLink) with their presets, for the lesson
// "why more devices made it slower": communication grows with the model and with a slower link.
// Both are demonstrations and labelled as such wherever such a run shows; the reference CNN on
// this machine's own exchange is the default.
#pragma once
#include <QGroupBox>

#include <optional>

#include "comm/simulated_link.h"
#include "experiment/scaling_model.h"
#include "model/model_spec.h"

class QComboBox;
class QLabel;

namespace mb {

class WhatIfPicker : public QGroupBox {
  Q_OBJECT
 public:
  explicit WhatIfPicker(QWidget* parent = nullptr);

  ModelSpec model() const;
  SimulatedLink link() const;   // gbit 0: off
  void set(const ModelSpec& model, const SimulatedLink& link);
  // What the note compares a simulated link with: the replicas the run would exchange among,
  // and this machine's calibrated all-reduce (nullptr: not calibrated yet).
  void set_replicas(int replicas);
  void set_calibration(const Calibration* calibration);

 signals:
  void changed();

 private:
  void update_note();
  QString link_note() const;
  QComboBox* model_;
  QComboBox* link_;
  QLabel* note_;
  int replicas_ = 1;
  std::optional<Calibration> calibration_;
};

}  // namespace mb
