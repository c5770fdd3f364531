// The setup panel's data set group: Fashion-MNIST by default, any folder with the four
// MNIST-layout IDX files (chosen with Browse, remembered as recent folders), or synthetic
// images of the model's shape (data/synthetic.h: for a model no data set here fits); and what
// is wrong with the choice, if anything.
#pragma once
#include <QGroupBox>
#include <QString>
#include <QStringList>

#include "model/layer.h"

class QComboBox;
class QLabel;
class QToolButton;

namespace mb {

class DataPicker : public QGroupBox {
  Q_OBJECT
 public:
  explicit DataPicker(QWidget* parent = nullptr);

  QString dir() const;                     // empty: the default data set; "synthetic:HxWxC:K"
  void set_dir(const QString& dir);        // empty: the default data set
  bool synthetic() const;
  // The model's input and classes: the synthetic images' shape, and what an IDX folder (28x28x1,
  // 10 classes) is checked against.
  void set_model(const ImageShape& input, int classes);
  QStringList recent_dirs() const;
  void set_recent_dirs(const QStringList& dirs);   // folders that no longer exist are dropped

  // Why the choice cannot be trained on (a folder missing or not IDX, images of another shape
  // than the model's), or empty.
  QString problem() const;
  // The part of it that is the model's: images of another shape, fewer outputs than classes.
  QString misfit() const;

 signals:
  void changed();

 private:
  void add_dir(const QString& dir, bool select);
  void browse();
  void update_status();

  QComboBox* combo_;
  QToolButton* browse_;
  QLabel* status_;
  ImageShape input_;
  int classes_ = 10;
};

}  // namespace mb
