// The setup panel's data set group: Fashion-MNIST by default, or any folder with the four
// MNIST-layout IDX files (chosen with Browse, remembered as recent folders), and what is
// wrong with the chosen folder, if anything.
#pragma once
#include <QGroupBox>
#include <QString>
#include <QStringList>

class QComboBox;
class QLabel;
class QToolButton;

namespace mb {

class DataPicker : public QGroupBox {
  Q_OBJECT
 public:
  explicit DataPicker(QWidget* parent = nullptr);

  QString dir() const;                     // empty: the default data set
  void set_dir(const QString& dir);        // empty: the default data set
  QStringList recent_dirs() const;
  void set_recent_dirs(const QStringList& dirs);   // folders that no longer exist are dropped

  // Why the chosen folder cannot be trained on (missing, not IDX), or empty.
  QString problem() const;

 signals:
  void changed();

 private:
  void add_dir(const QString& dir, bool select);
  void browse();
  void update_status();

  QComboBox* combo_;
  QToolButton* browse_;
  QLabel* status_;
};

}  // namespace mb
