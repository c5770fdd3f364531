// The setup panel's "What if" group: a what-if model (the dense width, TrainConfig::model) and a
// simulated link (TrainConfig::link_gbit / link_latency_us) with their presets, for the lesson
// "why more devices made it slower": communication grows with the model and with a slower link.
// Both are demonstrations and labelled as such wherever such a run shows; the reference CNN on
// this machine's own exchange is the default.
#pragma once
#include <QGroupBox>

#include "comm/simulated_link.h"
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

 signals:
  void changed();

 private:
  void update_note();
  QComboBox* model_;
  QComboBox* link_;
  QLabel* note_;
};

}  // namespace mb
