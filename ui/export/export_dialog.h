// Asks what to export as PNG (one chart or all of them) and at which pixel size.
#pragma once
#include <QDialog>
#include <QSize>

#include <optional>

#include "charts/chart_content.h"

class QComboBox;
class QSpinBox;

namespace mb {

class ExportDialog : public QDialog {
  Q_OBJECT
 public:
  ExportDialog(QSize size, QWidget* parent = nullptr);

  std::optional<ChartKind> chart() const;   // nullopt: all charts as one image
  QSize size() const;

 private:
  QComboBox* what_;
  QComboBox* preset_;
  QSpinBox* width_;
  QSpinBox* height_;
};

}  // namespace mb
