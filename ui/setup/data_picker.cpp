// Data set group widget.
#include "setup/data_picker.h"

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QMenu>
#include <QPushButton>
#include <QVBoxLayout>

#include <filesystem>

#include "data/dataset.h"
#include "data/data_source.h"
#include "data/synthetic.h"
#include "model/model_shape.h"
#include "setup/note_label.h"
#include "util/error.h"

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
  browse_ = new QPushButton(tr("Other data…"), this);   // a push button keeps room for its menu arrow
  browse_->setObjectName("data_browse");
  browse_->setToolTip(tr("A folder with IDX files in the MNIST layout (train-images-idx3-ubyte, … each may be .gz), "
                         "with x_train.npy, y_train.npy, x_test.npy and y_test.npy, or with CIFAR-10's binary "
                         "batches; or a NumPy .npz file as keras.datasets keeps them"));
  auto* menu = new QMenu(browse_);
  menu->addAction(tr("Folder (IDX, NumPy .npy or CIFAR-10)…"), this, &DataPicker::browse);
  menu->addAction(tr("NumPy .npz file…"), this, &DataPicker::browse_npz);
  browse_->setMenu(menu);
  status_ = note_label(this);
  status_->setObjectName("data_status");
  auto* row = new QHBoxLayout;
  row->addWidget(combo_, 1);
  row->addWidget(browse_);
  auto* v = new QVBoxLayout(this);
  v->addLayout(row);
  v->addWidget(status_);
  connect(combo_, &QComboBox::currentIndexChanged, this, [this] {
    probed_ = false;   // another choice: read its headers afresh
    update_status();
    emit changed();
  });
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
  probed_ = false;   // chosen (again): its files may have changed
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
  const QString chosen = QFileDialog::getExistingDirectory(this, tr("Choose a data folder"), start);
  if (!chosen.isEmpty()) add_dir(chosen, true);
}

void DataPicker::browse_npz() {
  const QString start = synthetic() || dir().isEmpty() ? QDir::homePath() : QFileInfo(dir()).absolutePath();
  const QString chosen =
      QFileDialog::getOpenFileName(this, tr("Choose a NumPy data set"), start, tr("NumPy archives (*.npz)"));
  if (!chosen.isEmpty()) add_dir(chosen, true);
}

QStringList DataPicker::recent_dirs() const {
  QStringList dirs;
  for (int i = 2; i < combo_->count(); ++i) dirs << combo_->itemData(i).toString();   // after default and synthetic
  return dirs;
}

void DataPicker::set_recent_dirs(const QStringList& dirs) {
  for (const QString& d : dirs) {
    if (!d.isEmpty() && QFileInfo::exists(d)) add_dir(d, false);   // a folder, or an .npz file
  }
}

QString DataPicker::problem() const {
  if (synthetic()) return {};
  const QString chosen = dir();
  const std::filesystem::path folder =
      chosen.isEmpty() ? default_data_dir() : std::filesystem::path(chosen.toStdString());
  std::error_code ec;
  if (!std::filesystem::exists(folder, ec)) {
    return chosen.isEmpty() ? tr("Fashion-MNIST was not found in %1. Install the dataset-fashion-mnist package "
                                 "or choose other data.")
                                  .arg(QString::fromStdString(folder.string()))
                            : tr("%1 does not exist.").arg(chosen);
  }
  const Probe& p = probe();
  if (!p.error.isEmpty()) return p.error;
  if (p.info.format == DataFormat::Idx) {
    QStringList missing;
    for (const char* base : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                             "t10k-labels-idx1-ubyte"}) {
      if (!std::filesystem::exists(folder / base, ec) && !std::filesystem::exists(folder / (std::string(base) + ".gz"), ec))
        missing << QString::fromLatin1(base);
    }
    if (!missing.isEmpty())
      return tr("%1 holds no data set mirrorbench reads: no IDX files (missing %2, raw or .gz), no x_train.npy "
                "…, no CIFAR-10 batches, no train/ and test/ folders of images.")
          .arg(QString::fromStdString(folder.string()), missing.join(", "));
  }
  return misfit();
}

const DataPicker::Probe& DataPicker::probe() const {
  // One read of the headers per choice: problem(), misfit() and the status line all ask, on
  // every change of the panel. Choosing a source, even the same one again, reads it afresh.
  const QString source = dir();
  if (probed_source_ == source && probed_) return probe_;
  probe_ = Probe{};
  try {
    probe_.info = probe_data_source(source.toStdString());
  } catch (const std::exception& e) {
    probe_.error = QString::fromStdString(e.what());
  }
  probed_source_ = source;
  probed_ = true;
  return probe_;
}

QString DataPicker::misfit() const {
  if (synthetic()) return {};
  const Probe& p = probe();
  if (!p.error.isEmpty()) return {};   // the data's own problem, said by problem()
  const ImageShape& shape = p.info.shape;
  const QString format = QString::fromLatin1(format_name(p.info.format).data());
  if (input_ != shape)
    return tr("The model reads %1x%2x%3 images; the data (%4) holds %5x%6x%7 ones: choose Synthetic images (of "
              "the model's shape), or a model for %5x%6x%7.")
        .arg(input_.h)
        .arg(input_.w)
        .arg(input_.c)
        .arg(format)
        .arg(shape.h)
        .arg(shape.w)
        .arg(shape.c);
  // A NumPy set's class count comes from its labels (classes 0): checked when the run loads them.
  if (p.info.classes > 0 && classes_ < p.info.classes)
    return tr("The model has %1 outputs; the data (%2) has %3 classes: end the model with dense%3.")
        .arg(classes_)
        .arg(format)
        .arg(p.info.classes);
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
  const QString format = QString::fromLatin1(format_name(probe().info.format).data());
  status_->setText(ok ? tr("%1: %2").arg(format, folder) : QString());
  status_->setVisible(ok);
}

}  // namespace mb
