// The setup panel's data set group: Fashion-MNIST by default, other data (chosen with Other
// data…, remembered as recent choices: a folder of IDX files, of NumPy .npy files or of
// CIFAR-10 batches, or a NumPy .npz; data/data_source.h tells them apart), or synthetic images
// of the model's shape (data/synthetic.h: for a model no data set here fits); and what is
// wrong with the choice, if anything (read from the data's headers: its shape against the
// model's input).
#pragma once
#include <QGroupBox>
#include <QString>
#include <QStringList>

#include "data/data_source.h"
#include "model/layer.h"

class QComboBox;
class QLabel;
class QPushButton;

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
  struct Probe {
    DataSourceInfo info;
    QString error;   // the headers' own problem (DataError), or empty
  };
  const Probe& probe() const;
  void add_dir(const QString& dir, bool select);
  void browse();
  void browse_npz();
  void update_status();

  QComboBox* combo_;
  QPushButton* browse_;   // "Other data…": a menu of a folder or an .npz file
  QLabel* status_;
  mutable Probe probe_;            // the last choice's headers (probe())
  mutable QString probed_source_;
  mutable bool probed_ = false;
  ImageShape input_;
  int classes_ = 10;
};

}  // namespace mb
