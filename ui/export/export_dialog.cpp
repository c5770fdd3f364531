// PNG export options dialog.
#include "export/export_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>

namespace mb {

namespace {
constexpr int kInsightPage = 100;   // the items of "Where the time goes": 100 + InsightChart + 1
}  // namespace

ExportDialog::ExportDialog(QSize size, QWidget* parent, bool insight) : QDialog(parent) {
  setWindowTitle(tr("Export charts as PNG"));
  what_ = new QComboBox(this);
  what_->addItem(tr("All charts and the comparison, as one image"), -1);
  what_->addItem(tr("Time per epoch"), int(ChartKind::EpochTime));
  what_->addItem(tr("Accuracy"), int(ChartKind::Accuracy));
  what_->addItem(tr("Loss"), int(ChartKind::Loss));
  what_->addItem(tr("Where the time goes: all four, as one image"), kInsightPage);
  what_->addItem(tr("Breakdown per replica"), kInsightPage + 1 + int(InsightChart::Breakdown));
  what_->addItem(tr("Timeline of the last steps"), kInsightPage + 1 + int(InsightChart::Timeline));
  what_->addItem(tr("Predicted epoch time"), kInsightPage + 1 + int(InsightChart::Prediction));
  if (insight) what_->setCurrentIndex(what_->findData(kInsightPage));
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
  if (v < 0 || v >= kInsightPage) return std::nullopt;
  return static_cast<ChartKind>(v);
}

bool ExportDialog::insight() const { return what_->currentData().toInt() >= kInsightPage; }

std::optional<InsightChart> ExportDialog::insight_chart() const {
  const int v = what_->currentData().toInt();
  if (v <= kInsightPage) return std::nullopt;
  return static_cast<InsightChart>(v - kInsightPage - 1);
}

QSize ExportDialog::size() const { return QSize(width_->value(), height_->value()); }

}  // namespace mb
