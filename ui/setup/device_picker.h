// The setup panel's device group: the CPU (as N replicas, one core each) and every GPU with
// name, memory and compute capability, several replicas per GPU to simulate more GPUs, and a
// sentence on why no GPU is usable when there is none. CPU and GPU replicas never mix.
#pragma once
#include <QGroupBox>
#include <QString>
#include <QStringList>

#include "backends/devices.h"

class QLabel;
class QListWidget;
class QSpinBox;

namespace mb {

class DevicePicker : public QGroupBox {
  Q_OBJECT
 public:
  explicit DevicePicker(DeviceInventory inventory, QWidget* parent = nullptr);

  const DeviceInventory& inventory() const { return inventory_; }

  DeviceList devices() const;              // cpu:2, cuda:0,cuda:1; empty when nothing is ticked
  void set_devices(const DeviceList& devices);   // vanished GPUs (or none given): one CPU replica
  int replicas() const;                    // replicas the ticked devices make
  bool gpus_selected() const;              // GPUs are ticked (not the CPU)
  int replicas_per_gpu() const;
  DeviceList single_device() const;        // the baseline device: cpu:1 or the first GPU
  DeviceList all_devices() const;          // every usable device: for the reference experiment
  // Whether the reference experiment can compare against one device here (two or more CPU
  // cores, or two or more GPU replicas).
  bool reference_possible() const;
  QStringList advice() const;              // worth knowing, not blocking: one core, simulated GPUs

 signals:
  void changed();

 private:
  void update_state();

  DeviceInventory inventory_;
  QListWidget* list_;
  QSpinBox* cpu_replicas_;
  QSpinBox* per_gpu_;
  QLabel* note_;
};

}  // namespace mb
