// The setup panel's "Model" group: which network the run trains. A preset, any layer text typed
// in the one-line editor (model/model_text.h), or a Keras model file opened from disk
// (keras/keras_model.h); as you type, the note shows what the model costs a mirrored run
// (parameters, MB per all-reduce, MFLOP per image, memory per replica at the run's batch) or,
// inline, why the text is not a model. The reference experiment always trains the reference CNN.
#pragma once
#include <QGroupBox>

#include <optional>

#include "model/model_spec.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;

namespace mb {

class ModelPicker : public QGroupBox {
  Q_OBJECT
 public:
  explicit ModelPicker(QWidget* parent = nullptr);

  // The model the text names; nullopt while the text is not a model (the note says why).
  std::optional<ModelSpec> model() const { return model_; }
  void set(const ModelSpec& model);
  // The per-replica batch the memory figure is given for.
  void set_batch(int64_t per_replica);
  // Reads a Keras file into the picker; false (and a dialog naming the layer or the problem)
  // when it cannot be trained. What the file's import noted stays in the note.
  bool open_keras_file(const QString& path);

 signals:
  void changed();

 private:
  void reread();
  void preset_chosen(int index);
  void update_note();
  QComboBox* preset_;
  QLineEdit* text_;
  QPushButton* open_;
  QLabel* note_;
  std::optional<ModelSpec> model_;
  QString error_;        // why the text is not a model
  QString imported_;     // what the last opened file was read as (cleared by an edit)
  int64_t batch_ = 128;
};

}  // namespace mb
