// The setup panel's "Model" group (see model_picker.h).
#include "setup/model_picker.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMessageBox>
#include <QPushButton>
#include <QVBoxLayout>

#include "keras/keras_model.h"
#include "model/model_text.h"
#include "setup/note_label.h"
#include "util/error.h"

namespace mb {
namespace {

// The combo's item for a preset: its name and what it is for (the tooltip).
QString preset_item(const ModelPreset& p) {
  const QString name = QString::fromUtf8(p.name.data(), qsizetype(p.name.size()));
  return name == "reference" ? ModelPicker::tr("reference CNN") : name;
}

}  // namespace

ModelPicker::ModelPicker(QWidget* parent) : QGroupBox(tr("Model"), parent) {
  setObjectName("model_group");
  setToolTip(tr("Is the speed-up a matter of the model? Each model costs its own compute per image and its own "
                "all-reduce per step: compare them on the same devices. Runs of a model are compared with that "
                "model's baselines only."));
  preset_ = new QComboBox(this);
  preset_->setObjectName("model_preset");
  for (const ModelPreset& p : model_presets()) {
    preset_->addItem(preset_item(p), QString::fromStdString(model_text(model_from_text(p.name))));
    preset_->setItemData(preset_->count() - 1, QString::fromUtf8(p.about.data(), qsizetype(p.about.size())),
                         Qt::ToolTipRole);
  }
  preset_->addItem(tr("your own (type or open)"), QString());
  preset_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  preset_->setMinimumContentsLength(12);
  text_ = new QLineEdit(this);
  text_->setObjectName("model_text");
  text_->setToolTip(tr("Layers joined by '-': convF (3x3), convF@K (KxK), convF@Ks (same padding), pool, avgpool, gap, "
                       "flatten, denseN, dropP (P per cent); an optional HxWxC: prefix, e.g. "
                       "32x32x3:conv32@3s-conv32-pool-dense512-dense10. The last dense gives the class scores."));
  open_ = new QPushButton(tr("Open Keras file…"), this);
  open_->setObjectName("model_open");
  open_->setToolTip(tr("A model.to_json() file, a Keras 3 .keras file or a TensorFlow.js model.json: its layers, not "
                       "its weights"));
  note_ = note_label(this);
  note_->setObjectName("model_note");
  auto* form = new QFormLayout;
  form->addRow(tr("Preset:"), preset_);
  form->addRow(tr("Layers:"), text_);
  auto* v = new QVBoxLayout(this);
  v->addLayout(form);
  v->addWidget(open_, 0, Qt::AlignLeft);
  v->addWidget(note_);
  set(ModelSpec());
  connect(preset_, &QComboBox::activated, this, &ModelPicker::preset_chosen);
  connect(text_, &QLineEdit::textEdited, this, [this] {
    imported_.clear();   // an edited model is no longer the file's
    reread();
  });
  connect(open_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open a Keras model"), QString(),
                                                      tr("Keras models (*.json *.keras);;All files (*)"));
    if (!path.isEmpty()) open_keras_file(path);
  });
}

void ModelPicker::set(const ModelSpec& model) {
  text_->setText(QString::fromStdString(model.name()));
  imported_.clear();
  reread();
}

void ModelPicker::set_batch(int64_t per_replica) {
  if (per_replica == batch_) return;
  batch_ = per_replica;
  update_note();
}

void ModelPicker::preset_chosen(int index) {
  const QString text = preset_->itemData(index).toString();
  if (text.isEmpty()) {   // "your own": the editor is where it is written
    text_->setFocus();
    return;
  }
  set(model_from_text(text.toStdString()));
}

// Every keystroke: the text read as a model (or why not), the combo on its preset, the note.
void ModelPicker::reread() {
  const std::optional<ModelSpec> before = model_;
  try {
    model_ = model_from_text(text_->text().trimmed().toStdString());
    error_.clear();
  } catch (const ConfigError& e) {
    model_.reset();
    error_ = QString::fromStdString(e.what());
  }
  const QSignalBlocker block(preset_);
  const int preset = model_ ? preset_->findData(QString::fromStdString(model_text(*model_))) : -1;
  preset_->setCurrentIndex(preset >= 0 ? preset : preset_->count() - 1);
  update_note();
  if (!(before.has_value() == model_.has_value() && (!model_ || *before == *model_))) emit changed();
}

bool ModelPicker::open_keras_file(const QString& path) {
  try {
    const KerasImport k = import_keras_file(path.toStdString());
    text_->setText(QString::fromStdString(model_text(k.model)));
    reread();
    QStringList notes;
    for (const std::string& n : k.notes) notes << QString::fromStdString(n);
    imported_ = tr("From %1 (%2): %3.")
                    .arg(QFileInfo(path).fileName(), QString::fromStdString(k.format),
                         notes.join("; "));
    update_note();
    return true;
  } catch (const Error& e) {
    QMessageBox::warning(this, tr("Cannot use this Keras model"), QString::fromStdString(e.what()));
    return false;
  }
}

void ModelPicker::update_note() {
  if (!model_) {
    note_->setStyleSheet("color: #b00020;");
    note_->setText(error_);
    return;
  }
  note_->setStyleSheet("color: #555555;");
  const ModelSpec& m = *model_;
  QString text = tr("%1 parameters · %2 MB per all-reduce · %3 MFLOP per image · %4 MB per replica at batch %5.")
                     .arg(QLocale().toString(qlonglong(m.param_count())))
                     .arg(m.gradient_bytes() * 1e-6, 0, 'f', 2)
                     .arg(m.train_flops_per_image() * 1e-6, 0, 'f', 1)
                     .arg(m.shape().memory_bytes(batch_) * 1e-6, 0, 'f', 0)
                     .arg(batch_);
  const ImageShape& in = m.input();
  text += tr(" Reads %1x%2x%3 images, %4 classes.").arg(in.h).arg(in.w).arg(in.c).arg(m.classes());
  if (!m.is_reference()) text += tr(" Not the reference CNN: compared with its own baselines only.");
  if (!imported_.isEmpty()) text += " " + imported_;
  note_->setText(text);
}

}  // namespace mb
