// The run setup panel: the data set, device and process groups, the training settings (batch,
// epochs, learning rate, seed, sample limits, kernels, precision), the simulated straggler (a
// demonstration, off by default), the problems of the current combination explained in place
// (the core's list: trainer/run_check.h; the panel adds only what the front end itself lacks,
// such as mpirun or a readable hostfile), and the Run / Compare / Reference experiment / Sweep /
// Stop buttons.
#pragma once
#include <QStringList>
#include <QWidget>

#include "backends/devices.h"
#include "run/child_command.h"
#include "trainer/run_check.h"
#include "config/train_config.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QRadioButton;
class QSpinBox;

namespace mb {

struct Calibration;
class DataPicker;
class DevicePicker;
class ProcessPicker;
class StragglerPicker;
class WhatIfPicker;
class ModelPicker;

class RunSetupPanel : public QWidget {
  Q_OBJECT
 public:
  // `launcher`: what runs across processes would be started with (their group is disabled,
  // saying why, when it is not available).
  explicit RunSetupPanel(DeviceInventory inventory, const Launcher& launcher = find_launcher(),
                         QWidget* parent = nullptr);

  // What the fields say now. With several processes and GPUs ticked the devices are
  // "cuda:local": each process drives the GPU of its rank on its host.
  TrainConfig config() const;
  void set_config(const TrainConfig& config);   // unknown devices fall back to one CPU replica

  // The process group: 1, or N processes under mpirun, each with config().devices; the
  // hostfile (empty: this machine only) counts only with N > 1.
  int processes() const;
  QString hostfile() const;
  void set_processes(int processes, const QString& hostfile);
  void set_launcher(const Launcher& launcher);

  int replicas() const;                    // replicas in all: devices selected x processes
  DeviceList single_device() const;        // the baseline device: cpu:1 or the first GPU
  DeviceList all_devices() const;          // every usable device: for the reference experiment
  const DeviceInventory& inventory() const;
  QStringList problems() const;            // why Run is disabled (empty: runnable)
  // Things worth knowing that do not block a run: general_advice() under the fields, and the
  // teaching pace's length (when ticked) under its switch.
  QStringList advice() const;

  // While busy the fields are read-only and only Stop is enabled.
  void set_busy(bool busy);
  // This machine's calibration (nullptr: none), for the what-if link's note.
  void set_calibration(const Calibration* calibration);
  // A message from the trainer (ConfigError, DataError), shown under the fields until edited.
  void show_error(const QString& message);
  // Why the Sweep tab's settings cannot be swept (empty: they can): Sweep stays disabled.
  void set_sweep_problem(const QString& problem);

  QStringList recent_data_dirs() const;
  void set_recent_data_dirs(const QStringList& dirs);

  // The Run / Compare / Reference experiment / Sweep / Stop buttons, for the window to place
  // where they stay visible (a child of the panel until then).
  QWidget* actions() const { return actions_; }

  static const int kBatchPresets[4];

 signals:
  void run_clicked();
  void compare_clicked();
  void reference_clicked();
  void sweep_clicked();
  void lock_step_vs_balanced_clicked();
  void bare_vs_remedy_clicked();   // the What-if group's demonstration: bare, then with the remedy
  void stop_clicked();

 private:
  QWidget* build_training_group();
  void make_batch_fields(QWidget* group);
  void make_number_fields(QWidget* group);
  void make_engine_fields(QWidget* group);
  void on_changed();
  void update_state();
  int64_t batch_value() const;
  QStringList launch_problems() const;     // what this front end lacks to start the processes
  std::vector<RunProblem> core_problems() const;
  QString process_note() const;
  QStringList general_advice() const;
  QString pace_note() const;               // how long a Run at teaching pace would take

  bool busy_ = false;
  QString trainer_error_;

  DataPicker* data_;
  ModelPicker* model_;                     // the network: a preset, a layer text or a Keras file
  DevicePicker* devices_;
  ProcessPicker* processes_;
  StragglerPicker* straggler_;
  WhatIfPicker* what_if_;                  // the model and the simulated link
  QComboBox* batch_preset_;
  QSpinBox* batch_custom_;
  QRadioButton* batch_global_;
  QRadioButton* batch_per_replica_;
  QLabel* batch_note_;
  QSpinBox* epochs_;
  QDoubleSpinBox* lr_;
  QCheckBox* scale_lr_;
  QLabel* lr_note_;
  QSpinBox* seed_;
  QSpinBox* limit_train_;
  QSpinBox* limit_val_;
  QComboBox* backend_;
  QComboBox* precision_;
  QCheckBox* pace_;                        // teaching pace: TrainConfig::step_delay_s
  QLabel* pace_note_;
  QCheckBox* balance_;                     // balanced shares: TrainConfig::balance
  double pace_s_ = 1.0;                    // the pace while ticked (a script may set another)
  QString sweep_problem_;
  QLabel* message_;
  QWidget* actions_;
  QPushButton* run_;
  QPushButton* compare_;
  QPushButton* reference_;
  QPushButton* sweep_;
  QPushButton* stop_;
};

}  // namespace mb
