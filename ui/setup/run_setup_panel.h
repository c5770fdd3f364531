// The run setup panel: the data set and device groups, the training settings (batch, epochs,
// learning rate, seed, sample limits, CPU kernels), the problems of the current combination
// explained in place, and the Run / Compare / Reference experiment / Stop buttons.
#pragma once
#include <QStringList>
#include <QWidget>

#include "backends/devices.h"
#include "trainer/train_config.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QRadioButton;
class QSpinBox;

namespace mb {

class DataPicker;
class DevicePicker;

class RunSetupPanel : public QWidget {
  Q_OBJECT
 public:
  explicit RunSetupPanel(DeviceInventory inventory, QWidget* parent = nullptr);

  TrainConfig config() const;              // what the fields say now
  void set_config(const TrainConfig& config);   // unknown devices fall back to one CPU replica

  int replicas() const;                    // devices selected
  QString single_device() const;           // the baseline device: "cpu:1" or the first GPU
  QString all_devices() const;             // every usable device: for the reference experiment
  QStringList problems() const;            // why Run is disabled (empty: runnable)
  QStringList advice() const;              // things worth knowing that do not block a run

  // While busy the fields are read-only and only Stop is enabled.
  void set_busy(bool busy);
  // A message from the trainer (ConfigError, DataError), shown under the fields until edited.
  void show_error(const QString& message);

  QStringList recent_data_dirs() const;
  void set_recent_data_dirs(const QStringList& dirs);

  static const int kBatchPresets[4];

 signals:
  void run_clicked();
  void compare_clicked();
  void reference_clicked();
  void stop_clicked();

 private:
  QWidget* build_training_group();
  void on_changed();
  void update_state();
  int64_t batch_value() const;
  int64_t global_batch() const;            // the batch, times the replicas in per-replica mode

  bool busy_ = false;
  QString trainer_error_;

  DataPicker* data_;
  DevicePicker* devices_;
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
  QLabel* message_;
  QPushButton* run_;
  QPushButton* compare_;
  QPushButton* reference_;
  QPushButton* stop_;
};

}  // namespace mb
