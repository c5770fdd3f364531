// Run setup panel widget.
#include "run_setup_panel.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "data/dataset.h"
#include "plans.h"
#include "util/error.h"

namespace mb {

const int RunSetupPanel::kBatchPresets[4] = {64, 128, 256, 512};

namespace {

constexpr int kCpuItem = -1;   // device list user data: -1 = CPU, else CUDA ordinal

QLabel* note_label(QWidget* parent) {
  auto* l = new QLabel(parent);
  l->setWordWrap(true);
  l->setStyleSheet("color: #555555;");
  return l;
}

QString gib(int64_t bytes) { return QStringLiteral("%1 GiB").arg(double(bytes) / double(1ll << 30), 0, 'f', 0); }

}  // namespace

RunSetupPanel::RunSetupPanel(DeviceInventory inventory, QWidget* parent)
    : QWidget(parent), inventory_(std::move(inventory)) {
  message_ = new QLabel(this);
  message_->setObjectName("setup_message");
  message_->setWordWrap(true);
  message_->setTextFormat(Qt::RichText);

  run_ = new QPushButton(tr("Run"), this);
  run_->setObjectName("run_button");
  run_->setDefault(true);
  run_->setToolTip(tr("Train once with the settings above"));
  compare_ = new QPushButton(tr("Compare"), this);
  compare_->setObjectName("compare_button");
  reference_ = new QPushButton(tr("Reference experiment"), this);
  reference_->setObjectName("reference_button");
  reference_->setToolTip(tr("The classic task in one click: the reference CNN, 5 epochs, batch 128, one device "
                            "against all selected devices; judged on ≥ 40 % less time per epoch and > 80 % "
                            "validation accuracy"));
  stop_ = new QPushButton(tr("Stop"), this);
  stop_->setObjectName("stop_button");
  stop_->setToolTip(tr("Stop after the current step; the partial run is saved as “stopped”"));
  stop_->setEnabled(false);

  auto* buttons = new QGridLayout;
  buttons->addWidget(run_, 0, 0);
  buttons->addWidget(compare_, 0, 1);
  buttons->addWidget(reference_, 1, 0);
  buttons->addWidget(stop_, 1, 1);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(build_data_group());
  layout->addWidget(build_device_group());
  layout->addWidget(build_training_group());
  layout->addWidget(message_);
  layout->addLayout(buttons);
  layout->addStretch(1);

  connect(run_, &QPushButton::clicked, this, &RunSetupPanel::run_clicked);
  connect(compare_, &QPushButton::clicked, this, &RunSetupPanel::compare_clicked);
  connect(reference_, &QPushButton::clicked, this, &RunSetupPanel::reference_clicked);
  connect(stop_, &QPushButton::clicked, this, &RunSetupPanel::stop_clicked);
  update_state();
}

QWidget* RunSetupPanel::build_data_group() {
  auto* group = new QGroupBox(tr("Data set"), this);
  data_combo_ = new QComboBox(group);
  data_combo_->setObjectName("data_combo");
  data_combo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  data_combo_->setMinimumContentsLength(16);
  data_combo_->addItem(tr("Fashion-MNIST (default)"), QString());
  data_combo_->setItemData(0, QString::fromStdString(default_data_dir().string()), Qt::ToolTipRole);
  browse_ = new QToolButton(group);
  browse_->setText(tr("Other folder…"));
  browse_->setToolTip(tr("Choose a folder with IDX files in the MNIST layout: train-images-idx3-ubyte, "
                         "train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte (each may be .gz)"));
  data_status_ = note_label(group);
  data_status_->setObjectName("data_status");
  auto* row = new QHBoxLayout;
  row->addWidget(data_combo_, 1);
  row->addWidget(browse_);
  auto* v = new QVBoxLayout(group);
  v->addLayout(row);
  v->addWidget(data_status_);
  connect(data_combo_, &QComboBox::currentIndexChanged, this, &RunSetupPanel::on_changed);
  connect(browse_, &QToolButton::clicked, this, &RunSetupPanel::browse_data_dir);
  return group;
}

QWidget* RunSetupPanel::build_device_group() {
  auto* group = new QGroupBox(tr("Devices"), this);
  device_list_ = new QListWidget(group);
  device_list_->setObjectName("device_list");
  auto* cpu = new QListWidgetItem(
      tr("CPU: %1 (%n core(s))", nullptr, inventory_.cpu_cores).arg(QString::fromStdString(inventory_.cpu_name)),
      device_list_);
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
                                     device_list_);
    item->setData(Qt::UserRole, g.index);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
    item->setCheckState(Qt::Unchecked);
  }
  // As tall as its rows (up to 8), so one CPU line does not leave a large empty box.
  const int rows = std::min(device_list_->count(), 8);
  device_list_->setFixedHeight(device_list_->sizeHintForRow(0) * rows + 2 * device_list_->frameWidth() + 4);

  cpu_replicas_ = new QSpinBox(group);
  cpu_replicas_->setObjectName("cpu_replicas");
  cpu_replicas_->setRange(1, std::max(1, inventory_.cpu_cores));
  cpu_replicas_->setValue(std::max(1, inventory_.cpu_cores));
  cpu_replicas_->setSuffix(tr(" of %n core(s)", nullptr, inventory_.cpu_cores));
  cpu_replicas_->setToolTip(tr("How many CPU replicas (threads, one model copy each); at most one per core"));
  per_gpu_ = new QSpinBox(group);
  per_gpu_->setObjectName("replicas_per_gpu");
  per_gpu_->setRange(1, 8);
  per_gpu_->setToolTip(tr("More than one replica per GPU simulates a multi-GPU machine on one GPU "
                          "(labelled “simulated”: it shows the mechanics, not a real speedup)"));
  device_note_ = note_label(group);
  device_note_->setObjectName("device_note");

  auto* form = new QFormLayout;
  form->addRow(tr("CPU replicas:"), cpu_replicas_);
  if (!inventory_.gpus.empty()) form->addRow(tr("Replicas per GPU:"), per_gpu_);
  else per_gpu_->hide();
  auto* v = new QVBoxLayout(group);
  v->addWidget(device_list_);
  v->addLayout(form);
  v->addWidget(device_note_);

  // CPU and GPU replicas cannot be mixed in one run: checking one kind unchecks the other.
  connect(device_list_, &QListWidget::itemChanged, this, [this](QListWidgetItem* changed) {
    if (changed->checkState() == Qt::Checked) {
      const bool is_cpu = changed->data(Qt::UserRole).toInt() == kCpuItem;
      const QSignalBlocker block(device_list_);
      for (int i = 0; i < device_list_->count(); ++i) {
        QListWidgetItem* item = device_list_->item(i);
        if ((item->data(Qt::UserRole).toInt() == kCpuItem) != is_cpu) item->setCheckState(Qt::Unchecked);
      }
    }
    on_changed();
  });
  connect(cpu_replicas_, &QSpinBox::valueChanged, this, &RunSetupPanel::on_changed);
  connect(per_gpu_, &QSpinBox::valueChanged, this, &RunSetupPanel::on_changed);
  return group;
}

QWidget* RunSetupPanel::build_training_group() {
  auto* group = new QGroupBox(tr("Training"), this);
  batch_preset_ = new QComboBox(group);
  batch_preset_->setObjectName("batch_preset");
  for (int b : kBatchPresets) batch_preset_->addItem(QString::number(b), b);
  batch_preset_->addItem(tr("Custom"), 0);
  batch_preset_->setCurrentIndex(1);
  batch_custom_ = new QSpinBox(group);
  batch_custom_->setObjectName("batch_custom");
  batch_custom_->setRange(1, 65536);
  batch_custom_->setValue(128);
  batch_custom_->setEnabled(false);
  batch_global_ = new QRadioButton(tr("global"), group);
  batch_global_->setObjectName("batch_global");
  batch_global_->setToolTip(tr("The batch is split across the replicas (MirroredStrategy's global batch)"));
  batch_per_replica_ = new QRadioButton(tr("per replica"), group);
  batch_per_replica_->setObjectName("batch_per_replica");
  batch_per_replica_->setToolTip(tr("Every replica gets this batch: the global batch grows with the replicas"));
  batch_global_->setChecked(true);
  auto* mode = new QButtonGroup(group);
  mode->addButton(batch_global_);
  mode->addButton(batch_per_replica_);
  batch_note_ = note_label(group);
  batch_note_->setObjectName("batch_note");

  epochs_ = new QSpinBox(group);
  epochs_->setObjectName("epochs");
  epochs_->setRange(1, 1000);
  epochs_->setValue(5);
  lr_ = new QDoubleSpinBox(group);
  lr_->setObjectName("learning_rate");
  lr_->setDecimals(5);
  lr_->setRange(0.00001, 1.0);
  lr_->setSingleStep(0.0001);
  lr_->setValue(0.001);
  lr_->setToolTip(tr("Adam learning rate (Keras default 0.001)"));
  scale_lr_ = new QCheckBox(tr("scale with replicas"), group);
  scale_lr_->setObjectName("scale_lr");
  scale_lr_->setToolTip(tr("Linear scaling rule: learning rate × number of replicas"));
  lr_note_ = note_label(group);
  seed_ = new QSpinBox(group);
  seed_->setObjectName("seed");
  seed_->setRange(0, std::numeric_limits<int>::max());
  seed_->setValue(1);
  seed_->setToolTip(tr("Same seed, same weights and data order: runs differ only in the devices"));
  limit_train_ = new QSpinBox(group);
  limit_train_->setObjectName("limit_train");
  limit_train_->setRange(0, 10'000'000);
  limit_train_->setSingleStep(1024);
  limit_train_->setSpecialValueText(tr("all"));
  limit_train_->setGroupSeparatorShown(true);
  limit_train_->setToolTip(tr("Train on the first N images only: quick runs for a classroom"));
  limit_val_ = new QSpinBox(group);
  limit_val_->setObjectName("limit_val");
  limit_val_->setRange(0, 10'000'000);
  limit_val_->setSingleStep(1000);
  limit_val_->setSpecialValueText(tr("all"));
  limit_val_->setGroupSeparatorShown(true);
  limit_val_->setToolTip(tr("Validate on the first N images only"));
  backend_ = new QComboBox(group);
  backend_->setObjectName("backend");
  backend_->addItem(tr("auto (fastest)"), "auto");
  backend_->addItem(tr("oneDNN"), "onednn");
  backend_->addItem(tr("reference loops"), "reference");
  backend_->setToolTip(tr("CPU kernels: oneDNN (fast) or the plain reference loops (slow, for checking); "
                          "GPUs always use CUDA"));

  auto* batch_row = new QHBoxLayout;
  batch_row->addWidget(batch_preset_);
  batch_row->addWidget(batch_custom_, 1);
  auto* mode_row = new QHBoxLayout;
  mode_row->addWidget(batch_global_);
  mode_row->addWidget(batch_per_replica_);
  mode_row->addStretch(1);
  auto* form = new QFormLayout(group);
  form->addRow(tr("Batch:"), batch_row);
  form->addRow(QString(), mode_row);
  form->addRow(QString(), batch_note_);
  form->addRow(tr("Epochs:"), epochs_);
  form->addRow(tr("Learning rate:"), lr_);
  form->addRow(QString(), scale_lr_);
  form->addRow(QString(), lr_note_);
  form->addRow(tr("Seed:"), seed_);
  form->addRow(tr("Training images:"), limit_train_);
  form->addRow(tr("Validation images:"), limit_val_);
  form->addRow(tr("CPU kernels:"), backend_);

  connect(batch_preset_, &QComboBox::currentIndexChanged, this, [this] {
    const int preset = batch_preset_->currentData().toInt();
    batch_custom_->setEnabled(preset == 0 && !busy_);
    if (preset > 0) {
      const QSignalBlocker b(batch_custom_);
      batch_custom_->setValue(preset);
    }
    on_changed();
  });
  connect(batch_custom_, &QSpinBox::valueChanged, this, &RunSetupPanel::on_changed);
  connect(batch_global_, &QRadioButton::toggled, this, &RunSetupPanel::on_changed);
  connect(epochs_, &QSpinBox::valueChanged, this, &RunSetupPanel::on_changed);
  connect(lr_, &QDoubleSpinBox::valueChanged, this, &RunSetupPanel::on_changed);
  connect(scale_lr_, &QCheckBox::toggled, this, &RunSetupPanel::on_changed);
  connect(seed_, &QSpinBox::valueChanged, this, &RunSetupPanel::on_changed);
  connect(limit_train_, &QSpinBox::valueChanged, this, &RunSetupPanel::on_changed);
  connect(limit_val_, &QSpinBox::valueChanged, this, &RunSetupPanel::on_changed);
  connect(backend_, &QComboBox::currentIndexChanged, this, &RunSetupPanel::on_changed);
  return group;
}

void RunSetupPanel::add_data_dir(const QString& dir, bool select) {
  const QString clean = QDir::cleanPath(dir);
  int index = data_combo_->findData(clean);
  if (clean == QString::fromStdString(default_data_dir().string())) index = 0;
  if (index < 0) {
    data_combo_->addItem(QStringLiteral("%1 (%2)").arg(QFileInfo(clean).fileName(), clean), clean);
    index = data_combo_->count() - 1;
    data_combo_->setItemData(index, clean, Qt::ToolTipRole);
  }
  if (select) data_combo_->setCurrentIndex(index);
}

void RunSetupPanel::browse_data_dir() {
  const QString start = data_combo_->currentData().toString().isEmpty()
                            ? QString::fromStdString(default_data_dir().string())
                            : data_combo_->currentData().toString();
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Choose an IDX data folder"), start);
  if (!dir.isEmpty()) add_data_dir(dir, true);
}

QStringList RunSetupPanel::recent_data_dirs() const {
  QStringList dirs;
  for (int i = 1; i < data_combo_->count(); ++i) dirs << data_combo_->itemData(i).toString();
  return dirs;
}

void RunSetupPanel::set_recent_data_dirs(const QStringList& dirs) {
  for (const QString& d : dirs) {
    if (!d.isEmpty() && QFileInfo(d).isDir()) add_data_dir(d, false);
  }
}

int64_t RunSetupPanel::batch_value() const { return batch_custom_->value(); }

int RunSetupPanel::replicas() const {
  int gpus = 0;
  bool cpu = false;
  for (int i = 0; i < device_list_->count(); ++i) {
    const QListWidgetItem* item = device_list_->item(i);
    if (item->checkState() != Qt::Checked) continue;
    if (item->data(Qt::UserRole).toInt() == kCpuItem) cpu = true;
    else ++gpus;
  }
  return cpu ? cpu_replicas_->value() : gpus * per_gpu_->value();
}

TrainConfig RunSetupPanel::config() const {
  TrainConfig c;
  c.data_dir = data_combo_->currentData().toString().toStdString();
  QStringList devices;
  for (int i = 0; i < device_list_->count(); ++i) {
    const QListWidgetItem* item = device_list_->item(i);
    if (item->checkState() != Qt::Checked) continue;
    const int id = item->data(Qt::UserRole).toInt();
    if (id == kCpuItem) {
      devices = QStringList{QStringLiteral("cpu:%1").arg(cpu_replicas_->value())};
      break;
    }
    for (int k = 0; k < per_gpu_->value(); ++k) devices << QStringLiteral("cuda:%1").arg(id);
  }
  c.devices = devices.join(',').toStdString();
  c.batch = batch_value();
  c.per_replica_batch = batch_per_replica_->isChecked();
  c.lr = lr_->value();
  c.scale_lr = scale_lr_->isChecked();
  c.epochs = epochs_->value();
  c.seed = uint64_t(seed_->value());
  c.limit_train = limit_train_->value();
  c.limit_val = limit_val_->value();
  c.backend = backend_->currentData().toString().toStdString();
  return c;
}

void RunSetupPanel::set_config(const TrainConfig& c) {
  if (c.data_dir.empty()) data_combo_->setCurrentIndex(0);
  else add_data_dir(QString::fromStdString(c.data_dir), true);

  std::vector<DeviceSpec> devices;
  try {
    devices = parse_devices(c.devices);
  } catch (const Error&) {
    devices = {DeviceSpec{DeviceKind::Cpu, 0}};
  }
  {
    const QSignalBlocker b(device_list_);
    const bool cpu = devices.empty() || devices.front().kind == DeviceKind::Cpu;
    bool any = false;
    for (int i = 0; i < device_list_->count(); ++i) {
      QListWidgetItem* item = device_list_->item(i);
      const int id = item->data(Qt::UserRole).toInt();
      bool on = false;
      if (cpu) on = id == kCpuItem;
      else
        for (const auto& d : devices) on = on || (d.kind == DeviceKind::Cuda && d.index == id);
      item->setCheckState(on ? Qt::Checked : Qt::Unchecked);
      any = any || on;
    }
    if (!any) device_list_->item(0)->setCheckState(Qt::Checked);   // a GPU that is gone: use the CPU
    if (cpu) cpu_replicas_->setValue(std::clamp(int(devices.size()), 1, cpu_replicas_->maximum()));
    else {
      std::map<int, int> per;
      for (const auto& d : devices) ++per[d.index];
      int most = 1;
      for (const auto& [gpu, count] : per) most = std::max(most, count);
      per_gpu_->setValue(most);
    }
  }
  const int preset = batch_preset_->findData(int(c.batch));
  batch_preset_->setCurrentIndex(preset >= 0 ? preset : batch_preset_->count() - 1);
  batch_custom_->setValue(int(std::clamp<int64_t>(c.batch, 1, 65536)));
  batch_custom_->setEnabled(preset < 0 && !busy_);
  (c.per_replica_batch ? batch_per_replica_ : batch_global_)->setChecked(true);
  epochs_->setValue(c.epochs);
  lr_->setValue(c.lr);
  scale_lr_->setChecked(c.scale_lr);
  seed_->setValue(int(std::min<uint64_t>(c.seed, uint64_t(std::numeric_limits<int>::max()))));
  limit_train_->setValue(int(std::clamp<int64_t>(c.limit_train, 0, limit_train_->maximum())));
  limit_val_->setValue(int(std::clamp<int64_t>(c.limit_val, 0, limit_val_->maximum())));
  const int backend = backend_->findData(QString::fromStdString(c.backend));
  backend_->setCurrentIndex(backend >= 0 ? backend : 0);
  on_changed();
}

QString RunSetupPanel::single_device() const { return QString::fromStdString(baseline_device(config().devices)); }

QString RunSetupPanel::all_devices() const {
  const QString devices = QString::fromStdString(config().devices);
  if (replicas() > 1) return devices;
  if (devices.startsWith("cuda") && inventory_.gpus.size() > 1) {
    QStringList all;
    for (const auto& g : inventory_.gpus) all << QStringLiteral("cuda:%1").arg(g.index);
    return all.join(',');
  }
  if (devices.startsWith("cuda")) return devices;   // one GPU: nothing to compare against
  return QStringLiteral("cpu:%1").arg(std::max(1, inventory_.cpu_cores));
}

QString RunSetupPanel::data_dir_problem() const {
  const QString chosen = data_combo_->currentData().toString();
  const std::filesystem::path dir = chosen.isEmpty() ? default_data_dir() : std::filesystem::path(chosen.toStdString());
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return chosen.isEmpty() ? tr("Fashion-MNIST was not found in %1. Install the dataset-fashion-mnist package "
                                 "or choose another IDX folder.")
                                  .arg(QString::fromStdString(dir.string()))
                            : tr("The folder %1 does not exist.").arg(chosen);
  }
  QStringList missing;
  for (const char* base : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                           "t10k-labels-idx1-ubyte"}) {
    if (!std::filesystem::exists(dir / base, ec) && !std::filesystem::exists(dir / (std::string(base) + ".gz"), ec))
      missing << QString::fromLatin1(base);
  }
  if (!missing.isEmpty())
    return tr("%1 is not an IDX data folder: missing %2 (raw or .gz).")
        .arg(QString::fromStdString(dir.string()), missing.join(", "));
  return {};
}

QStringList RunSetupPanel::problems() const {
  QStringList p;
  const int n = replicas();
  if (n == 0) p << tr("Select at least one device.");
  if (const QString d = data_dir_problem(); !d.isEmpty()) p << d;
  const int64_t global = batch_per_replica_->isChecked() ? batch_value() * std::max(1, n) : batch_value();
  if (n > 0 && global < n)
    p << tr("A global batch of %1 cannot be split over %2 replicas: each replica needs at least one image. "
            "Use a batch of at least %2, or “per replica”.")
             .arg(global)
             .arg(n);
  if (global > 65536) p << tr("The global batch %1 is larger than the supported 65,536.").arg(global);
  return p;
}

QStringList RunSetupPanel::advice() const {
  QStringList a;
  const int n = replicas();
  const QString devices = QString::fromStdString(config().devices);
  if (devices.startsWith("cpu") && inventory_.cpu_cores < 2)
    a << tr("This machine has one core: CPU replicas cannot run in parallel here.");
  if (devices.startsWith("cuda") && per_gpu_->value() > 1)
    a << tr("Several replicas share one GPU: the run is labelled “simulated”.");
  const int64_t global = batch_per_replica_->isChecked() ? batch_value() * std::max(1, n) : batch_value();
  if (limit_train_->value() > 0 && limit_train_->value() < global)
    a << tr("The %1 training images are fewer than one global batch (%2): each epoch is a single step.")
             .arg(limit_train_->value())
             .arg(global);
  return a;
}

void RunSetupPanel::on_changed() {
  trainer_error_.clear();   // the user changed something: the old trainer message may no longer apply
  update_state();
}

void RunSetupPanel::show_error(const QString& message) {
  trainer_error_ = message;
  update_state();
}

void RunSetupPanel::set_busy(bool busy) {
  busy_ = busy;
  for (QWidget* w : findChildren<QGroupBox*>()) w->setEnabled(!busy);
  update_state();
}

void RunSetupPanel::update_state() {
  const int n = replicas();
  const QString data_problem = data_dir_problem();
  data_status_->setText(data_problem.isEmpty()
                            ? tr("Folder: %1").arg(data_combo_->currentData().toString().isEmpty()
                                                        ? QString::fromStdString(default_data_dir().string())
                                                        : data_combo_->currentData().toString())
                            : QString());
  data_status_->setVisible(data_problem.isEmpty());

  // Devices: say plainly what a run will use, and why there is no GPU when there is none.
  QString note;
  if (inventory_.gpus.empty()) {
    note = tr("No GPU usable: %1. Runs use CPU replicas.")
               .arg(inventory_.gpu_note.empty() ? tr("none found") : QString::fromStdString(inventory_.gpu_note));
  }
  cpu_replicas_->setEnabled(!busy_ && device_list_->count() > 0 && device_list_->item(0)->checkState() == Qt::Checked);
  per_gpu_->setEnabled(!busy_ && !cpu_replicas_->isEnabled());
  device_note_->setText(note);
  device_note_->setVisible(!note.isEmpty());

  const int64_t b = batch_value();
  if (batch_per_replica_->isChecked())
    batch_note_->setText(tr("Global batch %1 = %2 × %n replica(s)", nullptr, std::max(1, n)).arg(b * std::max(1, n)).arg(b));
  else if (n > 1)
    batch_note_->setText(b % n == 0 ? tr("%1 images per replica on %2 replicas").arg(b / n).arg(n)
                                    : tr("%1–%2 images per replica on %3 replicas").arg(b / n).arg(b / n + 1).arg(n));
  else
    batch_note_->setText(tr("All %1 images on one device").arg(b));
  lr_note_->setText(scale_lr_->isChecked() && n > 1
                        ? tr("Effective rate %1 (%2 × %3 replicas)").arg(lr_->value() * n).arg(lr_->value()).arg(n)
                        : QString());
  lr_note_->setVisible(!lr_note_->text().isEmpty());

  const QStringList problems = this->problems();
  QStringList lines;
  for (const QString& p : problems) lines << QStringLiteral("<span style='color:#c62828'>%1</span>").arg(p.toHtmlEscaped());
  // A trainer message while the data folder is bad is about that folder (the worker could not
  // load it): the problem above already says so, in the user's terms; show it once.
  if (!trainer_error_.isEmpty() && data_problem.isEmpty())
    lines << QStringLiteral("<span style='color:#c62828'>%1</span>").arg(trainer_error_.toHtmlEscaped());
  for (const QString& a : advice()) lines << QStringLiteral("<span style='color:#8a5a00'>%1</span>").arg(a.toHtmlEscaped());
  message_->setText(lines.join("<br>"));
  message_->setVisible(!lines.isEmpty());

  const bool ok = problems.isEmpty() && !busy_;
  run_->setEnabled(ok);
  compare_->setEnabled(ok && n > 1);
  compare_->setToolTip(n > 1 ? tr("Run %1 (the single-device baseline), then %2, back to back")
                                   .arg(single_device(), QString::fromStdString(config().devices))
                             : tr("Select two or more devices (or CPU replicas) to compare against one device"));
  const bool reference_possible = QString::fromStdString(config().devices).startsWith("cuda")
                                      ? (n > 1 || inventory_.gpus.size() > 1)
                                      : inventory_.cpu_cores > 1;
  reference_->setEnabled(ok && reference_possible);
  stop_->setEnabled(busy_);
}

}  // namespace mb
