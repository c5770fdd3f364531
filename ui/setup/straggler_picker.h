// The setup panel's "Simulated straggler" group, off by default: one CPU replica computes F
// times slower (the scenario's Straggler), so a class sees lock-step training
// run at the pace of the slowest device and the others' waiting grow. A demonstration, and
// labelled as one wherever such a run shows.
#pragma once
#include <QGroupBox>

#include "config/scenario.h"

class QDoubleSpinBox;
class QPushButton;
class QLabel;
class QSpinBox;

namespace mb {

class StragglerPicker : public QGroupBox {
  Q_OBJECT
 public:
  explicit StragglerPicker(QWidget* parent = nullptr);

  bool enabled_straggler() const { return isChecked(); }
  Straggler straggler() const;      // off when unticked
  void set(const Straggler& straggler);
  void set_replicas(int replicas);  // the replica field offers 0..replicas-1 (at least 0..1)
  void set_demo_enabled(bool enabled);   // the lock-step vs balanced button (a runnable request)

 signals:
  void changed();
  void lock_step_vs_balanced_clicked();   // the demonstration: the run lock-step, then balanced

 private:
  QSpinBox* replica_;
  QDoubleSpinBox* factor_;
  QLabel* note_;
  QPushButton* demo_;
  bool demo_allowed_ = false;
};

}  // namespace mb
