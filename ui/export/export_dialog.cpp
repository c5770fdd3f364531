// PNG export options dialog.
#include "export/export_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>

namespace mb {

ExportDialog::ExportDialog(QSize size, QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Export charts as PNG"));
  what_ = new QComboBox(this);
  what_->addItem(tr("All charts and the comparison, as one image"), -1);
  what_->addItem(tr("Time per epoch"), int(ChartKind::EpochTime));
  what_->addItem(tr("Accuracy"), int(ChartKind::Accuracy));
  what_->addItem(tr("Loss"), int(ChartKind::Loss));
  preset_ = new QComboBox(this);
  preset_->addItem(tr("Custom"), QSize());
  for (QSize s : {QSize(1280, 720), QSize(1600, 1000), QSize(1920, 1080), QSize(3840, 2160)})
    preset_->addItem(QStringLiteral("%1 × %2").arg(s.width()).arg(s.height()), s);
  width_ = new QSpinBox(this);
  height_ = new QSpinBox(this);
  for (QSpinBox* s : {width_, height_}) {
    s->setRange(64, 16384);
    s->setSuffix(tr(" px"));
  }
  width_->setValue(size.width());
  height_->setValue(size.height());
  auto* size_row = new QHBoxLayout;
  size_row->addWidget(width_);
  size_row->addWidget(new QLabel(QStringLiteral("×"), this));
  size_row->addWidget(height_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  auto* form = new QFormLayout(this);
  form->addRow(tr("Export:"), what_);
  form->addRow(tr("Size preset:"), preset_);
  form->addRow(tr("Size:"), size_row);
  form->addRow(buttons);
  connect(preset_, &QComboBox::currentIndexChanged, this, [this] {
    const QSize s = preset_->currentData().toSize();
    if (s.isValid()) {
      width_->setValue(s.width());
      height_->setValue(s.height());
    }
  });
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
}

std::optional<ChartKind> ExportDialog::chart() const {
  const int v = what_->currentData().toInt();
  if (v < 0) return std::nullopt;
  return static_cast<ChartKind>(v);
}

QSize ExportDialog::size() const { return QSize(width_->value(), height_->value()); }

}  // namespace mb
