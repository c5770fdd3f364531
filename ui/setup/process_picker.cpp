// Process group widget.
#include "setup/process_picker.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

#include "setup/note_label.h"

namespace mb {

ProcessPicker::ProcessPicker(const Launcher& launcher, QWidget* parent) : QGroupBox(tr("Processes"), parent) {
  setObjectName("process_group");
  count_ = new QSpinBox(this);
  count_->setObjectName("processes");
  count_->setRange(1, 256);
  count_->setSpecialValueText(tr("1 (in this process)"));
  count_->setSuffix(tr(" processes (mpirun)"));
  count_->setToolTip(tr("1: the trainer runs inside the workbench. N > 1: N mirrorbench-cli processes under mpirun, "
                        "each with the devices above (one GPU each when GPUs are ticked), all-reducing over MPI"));
  hostfile_ = new QLineEdit(this);
  hostfile_->setObjectName("hostfile");
  hostfile_->setPlaceholderText(tr("none: this machine only"));
  hostfile_->setClearButtonEnabled(true);
  hostfile_->setToolTip(tr("An Open MPI hostfile (one “host slots=N” per line) to run on several machines; they need "
                           "mirrorbench-cli and the data folder at the same paths. Without one, the processes stay "
                           "on this machine and talk over shared memory and loopback only"));
  browse_ = new QToolButton(this);
  browse_->setObjectName("hostfile_browse");
  browse_->setText(tr("Browse…"));
  note_ = note_label(this);
  note_->setObjectName("process_note");

  auto* host_row = new QHBoxLayout;
  host_row->addWidget(hostfile_, 1);
  host_row->addWidget(browse_);
  auto* form = new QFormLayout;
  form->addRow(tr("Run as:"), count_);
  form->addRow(tr("Hostfile:"), host_row);
  auto* v = new QVBoxLayout(this);
  v->addLayout(form);
  v->addWidget(note_);

  connect(count_, &QSpinBox::valueChanged, this, [this] {
    update_state();
    emit changed();
  });
  connect(hostfile_, &QLineEdit::textChanged, this, &ProcessPicker::changed);
  connect(browse_, &QToolButton::clicked, this, &ProcessPicker::browse);
  set_launcher(launcher);
}

void ProcessPicker::set_launcher(const Launcher& launcher) {
  unavailable_ = launcher.problem();
  if (!available()) {
    const QSignalBlocker b(count_);
    count_->setValue(1);
  }
  setToolTip(unavailable_);
  update_state();
  emit changed();
}

int ProcessPicker::processes() const { return count_->value(); }

void ProcessPicker::set_processes(int processes) {
  count_->setValue(std::clamp(processes, 1, count_->maximum()));
}

QString ProcessPicker::hostfile() const { return hostfile_->text().trimmed(); }
void ProcessPicker::set_hostfile(const QString& file) { hostfile_->setText(file); }

QString ProcessPicker::hostfile_problem() const {
  const QString file = hostfile();
  if (processes() < 2 || file.isEmpty()) return {};
  const QFileInfo info(file);
  if (!info.exists()) return tr("The hostfile %1 does not exist.").arg(file);
  if (!info.isFile() || !info.isReadable()) return tr("The hostfile %1 is not a readable file.").arg(file);
  return {};
}

void ProcessPicker::set_note(const QString& text) {
  note_->setText(available() ? text : tr("Runs across processes: %1.").arg(unavailable_));
  note_->setVisible(!note_->text().isEmpty());
}

void ProcessPicker::browse() {
  const QString file = QFileDialog::getOpenFileName(this, tr("Choose an Open MPI hostfile"), hostfile());
  if (!file.isEmpty()) hostfile_->setText(file);
}

void ProcessPicker::update_state() {
  // The spin box stays usable when a scripted run asked for processes anyway, so the panel
  // can show what was asked; it is disabled only while it would offer nothing.
  count_->setEnabled(available() || count_->value() > 1);
  const bool multi = available() && count_->value() > 1;
  hostfile_->setEnabled(multi);
  browse_->setEnabled(multi);
  if (!available()) note_->setText(tr("Runs across processes: %1.").arg(unavailable_));
  note_->setVisible(!note_->text().isEmpty());
}

}  // namespace mb
