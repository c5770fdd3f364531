// The setup panel's process group: 1 process (the trainer inside the workbench) or N processes
// under mpirun, each with the devices above, on this machine (shared memory and loopback) or on
// the hosts of a hostfile. Disabled, saying why, where mpirun or mirrorbench-cli is missing.
#pragma once
#include <QGroupBox>
#include <QString>

#include "run/child_command.h"

class QLabel;
class QLineEdit;
class QSpinBox;
class QToolButton;

namespace mb {

class ProcessPicker : public QGroupBox {
  Q_OBJECT
 public:
  explicit ProcessPicker(const Launcher& launcher, QWidget* parent = nullptr);

  void set_launcher(const Launcher& launcher);   // unavailable: back to 1 process, fields disabled
  bool available() const { return unavailable_.isEmpty(); }
  QString unavailable_reason() const { return unavailable_; }

  int processes() const;
  void set_processes(int processes);
  QString hostfile() const;                      // empty: this machine only
  void set_hostfile(const QString& file);
  // Why the hostfile cannot be used (missing, not a file), or empty; only with processes > 1.
  QString hostfile_problem() const;

  void set_note(const QString& text);            // what the choice means with the devices above

 signals:
  void changed();

 private:
  void browse();
  void update_state();

  QString unavailable_;
  QSpinBox* count_;
  QLineEdit* hostfile_;
  QToolButton* browse_;
  QLabel* note_;
};

}  // namespace mb
