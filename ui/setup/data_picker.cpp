// Data set group widget.
#include "setup/data_picker.h"

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QToolButton>
#include <QVBoxLayout>

#include <filesystem>

#include "data/dataset.h"
#include "data/synthetic.h"
#include "model/model_shape.h"
#include "setup/note_label.h"

namespace mb {

DataPicker::DataPicker(QWidget* parent) : QGroupBox(tr("Data set"), parent) {
  combo_ = new QComboBox(this);
  combo_->setObjectName("data_combo");
  combo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  combo_->setMinimumContentsLength(16);
  combo_->addItem(tr("Fashion-MNIST (default)"), QString());
  combo_->setItemData(0, QString::fromStdString(default_data_dir().string()), Qt::ToolTipRole);
  combo_->addItem(tr("Synthetic images"), QStringLiteral("synthetic"));
  combo_->setItemData(1, tr("Labelled images of the model's input shape, seeded: any model runs for speed. Not a real "
                            "data set: its runs are never a baseline for one."),
                      Qt::ToolTipRole);
  browse_ = new QToolButton(this);
  browse_->setText(tr("Other folder…"));
  browse_->setToolTip(tr("Choose a folder with IDX files in the MNIST layout: train-images-idx3-ubyte, "
                         "train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte (each may be .gz)"));
  status_ = note_label(this);
  status_->setObjectName("data_status");
  auto* row = new QHBoxLayout;
  row->addWidget(combo_, 1);
  row->addWidget(browse_);
  auto* v = new QVBoxLayout(this);
  v->addLayout(row);
  v->addWidget(status_);
  connect(combo_, &QComboBox::currentIndexChanged, this, [this] {
    update_status();
    emit changed();
  });
  connect(browse_, &QToolButton::clicked, this, &DataPicker::browse);
  update_status();
}

QString DataPicker::dir() const {
  if (!synthetic()) return combo_->currentData().toString();
  return QString::fromStdString(synthetic_source({input_, std::max(classes_, 2)}));
}

bool DataPicker::synthetic() const { return combo_->currentData().toString() == QStringLiteral("synthetic"); }

void DataPicker::set_model(const ImageShape& input, int classes) {
  if (input == input_ && classes == classes_) return;
  input_ = input;
  classes_ = std::min(classes, kMaxClasses);
  update_status();
  if (synthetic()) emit changed();
}

void DataPicker::set_dir(const QString& dir) {
  if (dir.isEmpty()) combo_->setCurrentIndex(0);
  else if (parse_synthetic_source(dir.toStdString())) combo_->setCurrentIndex(1);   // its shape: the model's
  else add_dir(dir, true);
}

void DataPicker::add_dir(const QString& dir, bool select) {
  const QString clean = QDir::cleanPath(dir);
  int index = combo_->findData(clean);
  if (clean == QString::fromStdString(default_data_dir().string())) index = 0;
  if (index < 0) {
    // The folder's name: its path is the item's tooltip and the note under the combo.
    combo_->addItem(QFileInfo(clean).fileName(), clean);
    index = combo_->count() - 1;
    combo_->setItemData(index, clean, Qt::ToolTipRole);
  }
  if (select) combo_->setCurrentIndex(index);
}

void DataPicker::browse() {
  const QString start = dir().isEmpty() ? QString::fromStdString(default_data_dir().string()) : dir();
  const QString chosen = QFileDialog::getExistingDirectory(this, tr("Choose an IDX data folder"), start);
  if (!chosen.isEmpty()) add_dir(chosen, true);
}

QStringList DataPicker::recent_dirs() const {
  QStringList dirs;
  for (int i = 2; i < combo_->count(); ++i) dirs << combo_->itemData(i).toString();   // after default and synthetic
  return dirs;
}

void DataPicker::set_recent_dirs(const QStringList& dirs) {
  for (const QString& d : dirs) {
    if (!d.isEmpty() && QFileInfo(d).isDir()) add_dir(d, false);
  }
}

QString DataPicker::problem() const {
  if (synthetic()) return {};
  const QString chosen = dir();
  const std::filesystem::path folder =
      chosen.isEmpty() ? default_data_dir() : std::filesystem::path(chosen.toStdString());
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec)) {
    return chosen.isEmpty() ? tr("Fashion-MNIST was not found in %1. Install the dataset-fashion-mnist package "
                                 "or choose another IDX folder.")
                                  .arg(QString::fromStdString(folder.string()))
                            : tr("The folder %1 does not exist.").arg(chosen);
  }
  QStringList missing;
  for (const char* base : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                           "t10k-labels-idx1-ubyte"}) {
    if (!std::filesystem::exists(folder / base, ec) && !std::filesystem::exists(folder / (std::string(base) + ".gz"), ec))
      missing << QString::fromLatin1(base);
  }
  if (!missing.isEmpty())
    return tr("%1 is not an IDX data folder: missing %2 (raw or .gz).")
        .arg(QString::fromStdString(folder.string()), missing.join(", "));
  return misfit();
}

QString DataPicker::misfit() const {
  if (synthetic()) return {};
  if (input_ != ImageShape{28, 28, 1})
    return tr("The model reads %1x%2x%3 images; an IDX folder holds 28x28x1 ones: choose Synthetic images (of "
              "the model's shape), or a model for 28x28x1.")
        .arg(input_.h)
        .arg(input_.w)
        .arg(input_.c);
  if (classes_ < 10)
    return tr("The model has %1 outputs; an IDX folder has 10 classes: end the model with dense10.").arg(classes_);
  return {};
}

void DataPicker::update_status() {
  if (synthetic()) {
    status_->setStyleSheet("color: #555555;");
    status_->setText(tr("Synthetic %1x%2x%3 images, %4 classes, one label in ten random: for speed, not a data set's "
                        "accuracy.")
                         .arg(input_.h)
                         .arg(input_.w)
                         .arg(input_.c)
                         .arg(std::max(classes_, 2)));
    status_->setVisible(true);
    return;
  }
  // A model of another shape is said here too, where it is fixed (the panel lists every
  // problem under the fields); a folder's own problem only there.
  if (const QString m = misfit(); !m.isEmpty()) {
    status_->setStyleSheet("color: #b00020;");
    status_->setText(m);
    status_->setVisible(true);
    return;
  }
  status_->setStyleSheet("color: #555555;");
  const bool ok = problem().isEmpty();
  QString folder = dir().isEmpty() ? QString::fromStdString(default_data_dir().string()) : dir();
  // A path has no spaces to wrap at: let it break after each "/" (a zero-width space), so a
  // long one wraps within the column instead of widening it.
  folder.replace(QLatin1Char('/'), QStringLiteral("/\u200b"));
  status_->setText(ok ? tr("Folder: %1").arg(folder) : QString());
  status_->setVisible(ok);
}

}  // namespace mb
