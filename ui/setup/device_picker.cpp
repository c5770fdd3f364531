// Device group widget.
#include "setup/device_picker.h"

#include <QFormLayout>
#include <QLabel>
#include <QListWidget>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <map>

#include "experiment/plans.h"
#include "setup/note_label.h"
#include "util/error.h"

namespace mb {

namespace {

constexpr int kCpuItem = -1;   // device list user data: -1 = CPU, else CUDA ordinal

QString gib(int64_t bytes) { return QStringLiteral("%1 GiB").arg(double(bytes) / double(1ll << 30), 0, 'f', 0); }

}  // namespace

DevicePicker::DevicePicker(DeviceInventory inventory, QWidget* parent)
    : QGroupBox(tr("Devices"), parent), inventory_(std::move(inventory)) {
  list_ = new QListWidget(this);
  list_->setObjectName("device_list");
  auto* cpu = new QListWidgetItem(
      tr("CPU: %1 (%n core(s))", nullptr, inventory_.cpu_cores).arg(QString::fromStdString(inventory_.cpu_name)), list_);
  cpu->setData(Qt::UserRole, kCpuItem);
  cpu->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
  cpu->setCheckState(Qt::Checked);
  cpu->setToolTip(tr("CPU replicas: each replica is one thread with its own copy of the model; gradients are "
                     "summed in shared memory"));
  for (const GpuInfo& g : inventory_.gpus) {
    auto* item = new QListWidgetItem(tr("cuda:%1: %2 · %3 · compute %4.%5")
                                         .arg(g.index)
                                         .arg(QString::fromStdString(g.name), gib(g.memory_bytes))
                                         .arg(g.cc_major)
                                         .arg(g.cc_minor),
                                     list_);
    item->setData(Qt::UserRole, g.index);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
    item->setCheckState(Qt::Unchecked);
  }
  // As tall as its rows (up to 8), so one CPU line does not leave a large empty box.
  const int rows = std::min(list_->count(), 8);
  list_->setFixedHeight(list_->sizeHintForRow(0) * rows + 2 * list_->frameWidth() + 4);

  cpu_replicas_ = new QSpinBox(this);
  cpu_replicas_->setObjectName("cpu_replicas");
  cpu_replicas_->setRange(1, std::max(1, inventory_.cpu_cores));
  cpu_replicas_->setValue(std::max(1, inventory_.cpu_cores));
  cpu_replicas_->setSuffix(tr(" of %n core(s)", nullptr, inventory_.cpu_cores));
  cpu_replicas_->setToolTip(tr("How many CPU replicas (threads, one model copy each); at most one per core"));
  per_gpu_ = new QSpinBox(this);
  per_gpu_->setObjectName("replicas_per_gpu");
  per_gpu_->setRange(1, 8);
  per_gpu_->setToolTip(tr("More than one replica per GPU simulates a multi-GPU machine on one GPU "
                          "(labelled “simulated”: it shows the mechanics, not a real speedup)"));
  note_ = note_label(this);
  note_->setObjectName("device_note");
  // Say plainly why there is no GPU when there is none.
  if (inventory_.gpus.empty())
    note_->setText(tr("No GPU usable: %1. Runs use CPU replicas.")
                       .arg(inventory_.gpu_note.empty() ? tr("none found") : QString::fromStdString(inventory_.gpu_note)));
  note_->setVisible(!note_->text().isEmpty());

  auto* form = new QFormLayout;
  form->addRow(tr("CPU replicas:"), cpu_replicas_);
  if (!inventory_.gpus.empty()) form->addRow(tr("Replicas per GPU:"), per_gpu_);
  else per_gpu_->hide();
  auto* v = new QVBoxLayout(this);
  v->addWidget(list_);
  v->addLayout(form);
  v->addWidget(note_);

  // CPU and GPU replicas cannot be mixed in one run: checking one kind unchecks the other.
  connect(list_, &QListWidget::itemChanged, this, [this](QListWidgetItem* toggled) {
    if (toggled->checkState() == Qt::Checked) {
      const bool is_cpu = toggled->data(Qt::UserRole).toInt() == kCpuItem;
      const QSignalBlocker block(list_);
      for (int i = 0; i < list_->count(); ++i) {
        QListWidgetItem* item = list_->item(i);
        if ((item->data(Qt::UserRole).toInt() == kCpuItem) != is_cpu) item->setCheckState(Qt::Unchecked);
      }
    }
    update_state();
    emit changed();
  });
  connect(cpu_replicas_, &QSpinBox::valueChanged, this, &DevicePicker::changed);
  connect(per_gpu_, &QSpinBox::valueChanged, this, &DevicePicker::changed);
  update_state();
}

int DevicePicker::replicas() const {
  int gpus = 0;
  bool cpu = false;
  for (int i = 0; i < list_->count(); ++i) {
    const QListWidgetItem* item = list_->item(i);
    if (item->checkState() != Qt::Checked) continue;
    if (item->data(Qt::UserRole).toInt() == kCpuItem) cpu = true;
    else ++gpus;
  }
  return cpu ? cpu_replicas_->value() : gpus * per_gpu_->value();
}

bool DevicePicker::gpus_selected() const {
  const DeviceList d = devices();
  return !d.empty() && device_kind(d) == DeviceKind::Cuda;
}

int DevicePicker::replicas_per_gpu() const { return per_gpu_->value(); }

DeviceList DevicePicker::devices() const {
  DeviceList devices;
  for (int i = 0; i < list_->count(); ++i) {
    const QListWidgetItem* item = list_->item(i);
    if (item->checkState() != Qt::Checked) continue;
    const int id = item->data(Qt::UserRole).toInt();
    if (id == kCpuItem) return cpu_replicas(cpu_replicas_->value());
    for (int k = 0; k < per_gpu_->value(); ++k) devices.push_back({DeviceKind::Cuda, id});
  }
  return devices;
}

void DevicePicker::set_devices(const DeviceList& given) {
  const DeviceList devices = given.empty() ? cpu_replicas(1) : given;
  {
    const QSignalBlocker b(list_);
    const bool cpu = devices.empty() || devices.front().kind == DeviceKind::Cpu;
    bool any = false;
    for (int i = 0; i < list_->count(); ++i) {
      QListWidgetItem* item = list_->item(i);
      const int id = item->data(Qt::UserRole).toInt();
      bool on = false;
      if (cpu) on = id == kCpuItem;
      else
        for (const auto& d : devices) on = on || (d.kind == DeviceKind::Cuda && d.index == id);
      item->setCheckState(on ? Qt::Checked : Qt::Unchecked);
      any = any || on;
    }
    if (!any) list_->item(0)->setCheckState(Qt::Checked);   // a GPU that is gone: use the CPU
    const QSignalBlocker b1(cpu_replicas_), b2(per_gpu_);
    if (cpu) {
      cpu_replicas_->setValue(std::clamp(int(devices.size()), 1, cpu_replicas_->maximum()));
    } else {
      std::map<int, int> per;
      for (const auto& d : devices) ++per[d.index];
      int most = 1;
      for (const auto& [gpu, count] : per) most = std::max(most, count);
      per_gpu_->setValue(most);
    }
  }
  update_state();
  emit changed();
}

DeviceList DevicePicker::single_device() const { return baseline_devices(devices()); }

DeviceList DevicePicker::all_devices() const {
  const DeviceList devices = this->devices();
  if (replicas() > 1) return devices;
  if (gpus_selected() && inventory_.gpus.size() > 1) {
    DeviceList all;
    for (const auto& g : inventory_.gpus) all.push_back({DeviceKind::Cuda, g.index});
    return all;
  }
  if (gpus_selected()) return devices;   // one GPU: nothing to compare against
  return cpu_replicas(std::max(1, inventory_.cpu_cores));
}

bool DevicePicker::reference_possible() const {
  return gpus_selected() ? (replicas() > 1 || inventory_.gpus.size() > 1) : inventory_.cpu_cores > 1;
}

QStringList DevicePicker::advice() const {
  QStringList a;
  if (!gpus_selected() && inventory_.cpu_cores < 2)
    a << tr("This machine has one core: CPU replicas cannot run in parallel here.");
  if (gpus_selected() && per_gpu_->value() > 1)
    a << tr("Several replicas share one GPU: the run is labelled “simulated”.");
  return a;
}

void DevicePicker::update_state() {
  // The replica count that applies is editable, the other one not.
  const bool cpu = list_->count() > 0 && list_->item(0)->checkState() == Qt::Checked;
  cpu_replicas_->setEnabled(cpu);
  per_gpu_->setEnabled(!cpu);
}

}  // namespace mb
