// Run setup panel widget: the training group, the checks of the whole combination, the buttons.
#include "setup/run_setup_panel.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <limits>

#include "config/backend.h"
#include "config/precision.h"
#include "config/train_options.h"
#include "setup/data_picker.h"
#include "setup/device_picker.h"
#include "setup/note_label.h"
#include "setup/process_picker.h"
#include "setup/straggler_picker.h"
#include "setup/model_picker.h"
#include "setup/what_if_picker.h"
#include "trainer/run_check.h"

namespace mb {

const int RunSetupPanel::kBatchPresets[4] = {64, 128, 256, 512};

RunSetupPanel::RunSetupPanel(DeviceInventory inventory, const Launcher& launcher, QWidget* parent) : QWidget(parent) {
  data_ = new DataPicker(this);
  model_ = new ModelPicker(this);
  devices_ = new DevicePicker(std::move(inventory), this);
  processes_ = new ProcessPicker(launcher, this);
  straggler_ = new StragglerPicker(this);
  what_if_ = new WhatIfPicker(this);
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
  sweep_ = new QPushButton(tr("Sweep"), this);
  sweep_->setObjectName("sweep_button");
  stop_ = new QPushButton(tr("Stop"), this);
  stop_->setObjectName("stop_button");
  stop_->setToolTip(tr("Stop after the current step; the partial run is saved as “stopped”"));
  stop_->setEnabled(false);

  // The buttons live in their own bar, which the window keeps in view below the (scrolling)
  // fields: on a laptop or projector screen the fields may scroll, the buttons never do.
  actions_ = new QWidget(this);
  actions_->setObjectName("setup_actions");
  auto* buttons = new QGridLayout(actions_);
  buttons->setContentsMargins(9, 6, 9, 6);
  buttons->addWidget(run_, 0, 0);
  buttons->addWidget(compare_, 0, 1);
  buttons->addWidget(reference_, 1, 0);
  buttons->addWidget(sweep_, 1, 1);
  buttons->addWidget(stop_, 2, 0, 1, 2);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(data_);
  layout->addWidget(model_);
  layout->addWidget(devices_);
  layout->addWidget(processes_);
  layout->addWidget(build_training_group());
  layout->addWidget(straggler_);
  layout->addWidget(what_if_);
  layout->addWidget(message_);
  layout->addStretch(1);

  connect(run_, &QPushButton::clicked, this, &RunSetupPanel::run_clicked);
  connect(compare_, &QPushButton::clicked, this, &RunSetupPanel::compare_clicked);
  connect(reference_, &QPushButton::clicked, this, &RunSetupPanel::reference_clicked);
  connect(sweep_, &QPushButton::clicked, this, &RunSetupPanel::sweep_clicked);
  connect(stop_, &QPushButton::clicked, this, &RunSetupPanel::stop_clicked);
  connect(data_, &DataPicker::changed, this, &RunSetupPanel::on_changed);
  connect(devices_, &DevicePicker::changed, this, &RunSetupPanel::on_changed);
  connect(processes_, &ProcessPicker::changed, this, &RunSetupPanel::on_changed);
  connect(straggler_, &StragglerPicker::changed, this, &RunSetupPanel::on_changed);
  connect(straggler_, &StragglerPicker::lock_step_vs_balanced_clicked, this,
          &RunSetupPanel::lock_step_vs_balanced_clicked);
  connect(what_if_, &WhatIfPicker::changed, this, &RunSetupPanel::on_changed);
  connect(what_if_, &WhatIfPicker::bare_vs_remedy_clicked, this, &RunSetupPanel::bare_vs_remedy_clicked);
  connect(model_, &ModelPicker::changed, this, [this] {
    if (const auto m = model_->model()) {
      what_if_->set_model(*m);
      data_->set_model(m->input(), m->classes());
    }
    on_changed();
  });
  update_state();
}

// The batch: a preset or a custom size, global or per replica, and its note.
void RunSetupPanel::make_batch_fields(QWidget* group) {
  batch_preset_ = new QComboBox(group);
  batch_preset_->setObjectName("batch_preset");
  for (int b : kBatchPresets) batch_preset_->addItem(QString::number(b), b);
  batch_preset_->addItem(tr("Custom"), 0);
  batch_preset_->setCurrentIndex(1);
  batch_custom_ = new QSpinBox(group);
  batch_custom_->setObjectName("batch_custom");
  batch_custom_->setRange(1, int(kMaxGlobalBatch));
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
}

// Epochs, learning rate (and its scaling), seed and the sample limits.
void RunSetupPanel::make_number_fields(QWidget* group) {
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
  lr_note_ = note_label(group);   // always shown, ticked or not: the fields below never move
  lr_note_->setObjectName("lr_note");
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
}

// Which kernels and precision, and the teaching pace.
void RunSetupPanel::make_engine_fields(QWidget* group) {
  backend_ = new QComboBox(group);
  backend_->setObjectName("backend");
  backend_->addItem(tr("auto (fastest)"), QStringLiteral("auto"));
  backend_->addItem(tr("oneDNN"), QString::fromUtf8(to_string(Backend::OneDnn)));
  backend_->addItem(tr("reference loops"), QString::fromUtf8(to_string(Backend::Reference)));
  backend_->setToolTip(tr("CPU kernels: oneDNN (fast) or the plain reference loops (slow, for checking); "
                          "GPUs always use CUDA"));
  precision_ = new QComboBox(group);
  precision_->setObjectName("precision");
  precision_->addItem(tr("fp32"), QString::fromUtf8(to_string(Precision::Fp32)));
  precision_->addItem(tr("tf32 (GPU tensor cores)"), QString::fromUtf8(to_string(Precision::Tf32)));
  precision_->setToolTip(tr("fp32 everywhere, or TF32 tensor cores for the GPU's convolutions and GEMMs (faster, "
                            "10-bit products); the CPU engines compute in fp32 only"));
  pace_ = new QCheckBox(tr("Teaching pace (about one step a second)"), group);
  pace_->setObjectName("teaching_pace");
  pace_->setToolTip(tr("Slows a Run so that every step lasts about a second and the “One step” tab shows each "
                       "one: for following a short run in class. Its times are not the machine's speed, so it is "
                       "never used as a baseline; Compare, Reference experiment and Sweep always run at full speed."));
  // How long a paced run would take, under its switch, ticked or not: ticking it moves nothing.
  pace_note_ = note_label(group);
  pace_note_->setObjectName("pace_note");
  // Its words come from the option table (its help is the CLI's); the core's check says where it applies.
  const TrainOption& balance = train_option("balance");
  balance_ = new QCheckBox(tr("Balanced shares (CPU replicas)"), group);
  balance_->setObjectName(QString::fromUtf8(balance.key.data(), qsizetype(balance.key.size())));
  balance_->setToolTip(QString::fromUtf8(balance.flag.data(), qsizetype(balance.flag.size())) + QStringLiteral(": ") +
                       QString::fromUtf8(balance.help.data(), qsizetype(balance.help.size())));
}

QWidget* RunSetupPanel::build_training_group() {
  auto* group = new QGroupBox(tr("Training"), this);
  make_batch_fields(group);
  make_number_fields(group);
  make_engine_fields(group);

  auto* batch_row = new QHBoxLayout;
  batch_row->addWidget(batch_preset_);
  batch_row->addWidget(batch_custom_, 1);
  auto* mode_row = new QHBoxLayout;
  mode_row->addWidget(batch_global_);
  mode_row->addWidget(batch_per_replica_);
  mode_row->addStretch(1);
  // A form's two columns in a grid, where the notes and switches span both, as wide as the
  // group: in the narrow field column a note would wrap. Not a QFormLayout: it sized a wrapped
  // note by QLabel's own size hint (a gap around it), and when a spanning note wrapped it kept
  // a stale height for it after an unrelated change (squeezing three lines into two).
  auto* grid = new QGridLayout(group);
  grid->setColumnStretch(1, 1);
  int row = 0;
  const auto add_label = [&](const QString& text, QWidget* buddy) {
    auto* label = new QLabel(text, group);
    label->setBuddy(buddy);
    grid->addWidget(label, row, 0);
  };
  const auto add_field = [&](const QString& text, QWidget* field) {
    add_label(text, field);
    grid->addWidget(field, row++, 1);
  };
  const auto add_span = [&](QWidget* w) { grid->addWidget(w, row++, 0, 1, 2); };
  add_label(tr("Batch:"), batch_preset_);
  grid->addLayout(batch_row, row++, 1);
  grid->addLayout(mode_row, row++, 1);
  add_span(batch_note_);
  add_field(tr("Epochs:"), epochs_);
  add_field(tr("Learning rate:"), lr_);
  grid->addWidget(scale_lr_, row++, 1);
  add_span(lr_note_);
  add_field(tr("Seed:"), seed_);
  add_field(tr("Training images:"), limit_train_);
  add_field(tr("Validation images:"), limit_val_);
  add_field(tr("CPU kernels:"), backend_);
  add_field(tr("Precision:"), precision_);
  add_span(pace_);
  add_span(pace_note_);
  add_span(balance_);

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
  connect(precision_, &QComboBox::currentIndexChanged, this, &RunSetupPanel::on_changed);
  connect(pace_, &QCheckBox::toggled, this, &RunSetupPanel::on_changed);
  connect(balance_, &QCheckBox::toggled, this, &RunSetupPanel::on_changed);
  return group;
}

QStringList RunSetupPanel::recent_data_dirs() const { return data_->recent_dirs(); }
void RunSetupPanel::set_recent_data_dirs(const QStringList& dirs) { data_->set_recent_dirs(dirs); }

int64_t RunSetupPanel::batch_value() const { return batch_custom_->value(); }

int RunSetupPanel::replicas() const {
  const int n = processes();
  if (n < 2) return devices_->replicas();
  return devices_->gpus_selected() ? n : devices_->replicas() * n;   // cuda:local: one GPU each
}

int RunSetupPanel::processes() const { return processes_->processes(); }
QString RunSetupPanel::hostfile() const { return processes_->hostfile(); }

void RunSetupPanel::set_processes(int processes, const QString& hostfile) {
  processes_->set_hostfile(hostfile);
  processes_->set_processes(processes);
}

void RunSetupPanel::set_launcher(const Launcher& launcher) { processes_->set_launcher(launcher); }

DeviceList RunSetupPanel::single_device() const { return devices_->single_device(); }
DeviceList RunSetupPanel::all_devices() const { return devices_->all_devices(); }
const DeviceInventory& RunSetupPanel::inventory() const { return devices_->inventory(); }

TrainConfig RunSetupPanel::config() const {
  TrainConfig c;
  c.data_dir = data_->dir().toStdString();
  // Across processes with GPUs, each process drives the GPU of its rank on its host (shared
  // GPUs stay as they are, and the run check says they need one process).
  const bool one_gpu_each = processes() > 1 && devices_->gpus_selected() && devices_->replicas_per_gpu() == 1;
  c.devices = one_gpu_each ? DeviceList{{DeviceKind::Cuda, kLocalGpu}} : devices_->devices();
  c.batch = batch_value();
  c.per_replica_batch = batch_per_replica_->isChecked();
  c.lr = lr_->value();
  c.scale_lr = scale_lr_->isChecked();
  c.epochs = epochs_->value();
  c.seed = uint64_t(seed_->value());
  c.limit_train = limit_train_->value();
  c.limit_val = limit_val_->value();
  c.backend = parse_backend(backend_->currentData().toString().toStdString());   // "auto": none
  c.precision = parse_precision(precision_->currentData().toString().toStdString()).value_or(Precision::Fp32);
  c.step_delay_s = pace_->isChecked() ? pace_s_ : 0;
  c.scenario.straggler = straggler_->straggler();
  c.scenario.balance = balance_->isChecked();
  c.model = model_->model().value_or(ModelSpec());   // while the text is no model, problems() says so
  c.scenario.link = what_if_->link();
  what_if_->remedy_into(c.scenario);
  return c;
}

void RunSetupPanel::set_config(const TrainConfig& c) {
  data_->set_dir(QString::fromStdString(c.data_dir));
  // cuda:local is "one GPU per process": tick the first GPU, as the picker offers no such item.
  devices_->set_devices(uses_local_gpu(c.devices) ? DeviceList{{DeviceKind::Cuda, 0}} : c.devices);
  const int preset = batch_preset_->findData(int(c.batch));
  batch_preset_->setCurrentIndex(preset >= 0 ? preset : batch_preset_->count() - 1);
  batch_custom_->setValue(int(std::clamp<int64_t>(c.batch, 1, kMaxGlobalBatch)));
  batch_custom_->setEnabled(preset < 0 && !busy_);
  (c.per_replica_batch ? batch_per_replica_ : batch_global_)->setChecked(true);
  epochs_->setValue(c.epochs);
  lr_->setValue(c.lr);
  scale_lr_->setChecked(c.scale_lr);
  seed_->setValue(int(std::min<uint64_t>(c.seed, uint64_t(std::numeric_limits<int>::max()))));
  limit_train_->setValue(int(std::clamp<int64_t>(c.limit_train, 0, limit_train_->maximum())));
  limit_val_->setValue(int(std::clamp<int64_t>(c.limit_val, 0, limit_val_->maximum())));
  const int backend = backend_->findData(QString::fromUtf8(to_string(c.backend)));
  backend_->setCurrentIndex(backend >= 0 ? backend : 0);
  const int precision = precision_->findData(QString::fromUtf8(to_string(c.precision)));
  precision_->setCurrentIndex(precision >= 0 ? precision : 0);
  if (c.step_delay_s > 0) pace_s_ = c.step_delay_s;
  pace_->setChecked(c.step_delay_s > 0);
  straggler_->set(c.scenario.straggler);
  balance_->setChecked(c.scenario.balance);
  model_->set(c.model);
  what_if_->set_model(c.model);
  data_->set_model(c.model.input(), c.model.classes());
  what_if_->set_link(c.scenario.link);
  what_if_->set_remedy(c.scenario);
  on_changed();
}

// The core's rules for the fields' configuration where it will run (this machine's devices
// when no hostfile sends it elsewhere).
std::vector<RunProblem> RunSetupPanel::core_problems() const {
  const int n = processes();
  const RunSite site{n, n < 2 || hostfile().isEmpty(), &devices_->inventory()};
  return check_run(config(), site);
}

QStringList RunSetupPanel::problems() const {
  QStringList p;
  if (const QString d = data_->problem(); !d.isEmpty()) p << d;
  if (!model_->model()) p << tr("The model's layers are not a model (the Model group says why).");
  p << launch_problems();
  for (const RunProblem& x : core_problems())
    if (x.is_error()) p << QString::fromStdString(x.message);
  return p;
}

QStringList RunSetupPanel::launch_problems() const {
  QStringList p;
  const int n = processes();
  if (n < 2) return p;
  if (!processes_->available()) {
    p << tr("%1 processes cannot be started: %2.").arg(n).arg(processes_->unavailable_reason());
    return p;
  }
  if (const QString h = processes_->hostfile_problem(); !h.isEmpty()) p << h;
  return p;
}

QString RunSetupPanel::process_note() const {
  const int n = processes();
  if (n < 2) return tr("The trainer runs inside the workbench, one thread per replica.");
  const QString where = hostfile().isEmpty()
                            ? tr("on this machine (shared memory and loopback only)")
                            : tr("on the hosts of %1").arg(QFileInfo(hostfile()).fileName());
  const QString each = devices_->gpus_selected()
                           ? tr("each with one GPU (cuda:local: the GPU of its rank on its host)")
                           : tr("each with %n CPU replica(s)", nullptr, devices_->replicas());
  return tr("%1 mirrorbench-cli processes under mpirun %2, %3: %4 replicas in all.")
      .arg(n)
      .arg(where, each)
      .arg(replicas());
}

QStringList RunSetupPanel::advice() const {
  QStringList a = general_advice();
  if (pace_->isChecked()) a << pace_note();
  return a;
}

QStringList RunSetupPanel::general_advice() const {
  QStringList a = devices_->advice();
  for (const RunProblem& x : core_problems())
    if (!x.is_error()) a << QString::fromStdString(x.message);
  return a;
}

// At a second a step, the length of a paced run is its step count: say it before it starts.
QString RunSetupPanel::pace_note() const {
  if (limit_train_->value() == 0)
    return tr("At this pace the whole data set is hundreds of steps an epoch: set Training images to about 2,048 "
              "for a short demonstration.");
  const int64_t global = mb::global_batch(config(), processes());
  const int64_t steps = (limit_train_->value() + global - 1) / std::max<int64_t>(1, global) * epochs_->value();
  const int64_t s = int64_t(double(steps) * pace_s_ + 0.5);
  return tr("At this pace: %1 steps, about %2 min %3 s.").arg(steps).arg(s / 60).arg(s % 60, 2, 10, QChar('0'));
}

void RunSetupPanel::on_changed() {
  trainer_error_.clear();   // the user changed something: the old trainer message may no longer apply
  update_state();
}

void RunSetupPanel::show_error(const QString& message) {
  trainer_error_ = message;
  update_state();
}

void RunSetupPanel::set_sweep_problem(const QString& problem) {
  sweep_problem_ = problem;
  update_state();
}

void RunSetupPanel::set_busy(bool busy) {
  busy_ = busy;
  for (QWidget* w : findChildren<QGroupBox*>()) w->setEnabled(!busy);
  update_state();
}

void RunSetupPanel::set_calibration(const Calibration* calibration) { what_if_->set_calibration(calibration); }

void RunSetupPanel::update_state() {
  const int n = replicas();
  const int64_t b = batch_value();
  if (batch_per_replica_->isChecked())
    batch_note_->setText(tr("Global batch %1 = %2 × %n replica(s)", nullptr, std::max(1, n)).arg(b * std::max(1, n)).arg(b));
  else if (n > 1)
    batch_note_->setText(b % n == 0 ? tr("%1 images per replica on %2 replicas").arg(b / n).arg(n)
                                    : tr("%1–%2 images per replica on %3 replicas").arg(b / n).arg(b / n + 1).arg(n));
  else
    batch_note_->setText(tr("All %1 images on one device").arg(b));
  if (!scale_lr_->isChecked())
    lr_note_->setText(tr("Effective rate %1, whatever the replicas").arg(lr_->value()));
  else if (n > 1)
    lr_note_->setText(tr("Effective rate %1 (%2 × %3 replicas)").arg(lr_->value() * n).arg(lr_->value()).arg(n));
  else
    lr_note_->setText(tr("Effective rate %1 (one replica)").arg(lr_->value()));
  pace_note_->setText(pace_note());

  processes_->set_note(process_note());
  model_->set_batch(batch_per_replica_->isChecked() ? b : (b + std::max(1, n) - 1) / std::max(1, n));
  straggler_->set_replicas(n);
  what_if_->set_replicas(n);
  const QStringList problems = this->problems();
  QStringList lines;
  for (const QString& p : problems) lines << QStringLiteral("<span style='color:#c62828'>%1</span>").arg(p.toHtmlEscaped());
  // A trainer message while the data folder is bad is about that folder (the worker could not
  // load it): the problem above already says so, in the user's terms; show it once.
  if (!trainer_error_.isEmpty() && data_->problem().isEmpty())
    lines << QStringLiteral("<span style='color:#c62828'>%1</span>").arg(trainer_error_.toHtmlEscaped());
  for (const QString& a : general_advice()) lines << QStringLiteral("<span style='color:#8a5a00'>%1</span>").arg(a.toHtmlEscaped());
  message_->setText(lines.join("<br>"));
  message_->setVisible(!lines.isEmpty());

  const bool ok = problems.isEmpty() && !busy_;
  run_->setEnabled(ok);
  compare_->setEnabled(ok && n > 1);
  straggler_->set_demo_enabled(ok && n > 1);
  const QString run_devices = processes() > 1 ? tr("%1 × %2").arg(processes()).arg(QString::fromStdString(format_devices(config().devices)))
                                              : QString::fromStdString(format_devices(devices_->devices()));
  compare_->setToolTip(n > 1 ? tr("Run %1 (the single-device baseline), then %2, back to back")
                                   .arg(QString::fromStdString(format_devices(single_device())), run_devices)
                             : tr("Select two or more devices (or CPU replicas) to compare against one device"));
  reference_->setEnabled(ok && (devices_->reference_possible() || processes() > 1));
  sweep_->setEnabled(ok && sweep_problem_.isEmpty());
  sweep_->setToolTip(sweep_problem_.isEmpty()
                         ? tr("The bonus experiment in one click: every batch size of the Sweep tab with and without "
                              "linear learning-rate scaling on %1; time per epoch, validation accuracy and time to "
                              "the target accuracy, and the best configuration named. With the tab's Vary at a "
                              "model or a link: each one on 1 to N replicas and its speed-up over one")
                               .arg(run_devices)
                         : tr("Sweep: %1 (Sweep tab)").arg(sweep_problem_));
  stop_->setEnabled(busy_);
}

}  // namespace mb
