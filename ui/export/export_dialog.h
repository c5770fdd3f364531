// Asks what to export as PNG (one chart or all of them, of the training charts or of "Where
// the time goes") and at which pixel size.
#pragma once
#include <QDialog>
#include <QSize>

#include <optional>

#include "charts/chart_content.h"
#include "insight/insight_export.h"

class QComboBox;
class QSpinBox;

namespace mb {

class ExportDialog : public QDialog {
  Q_OBJECT
 public:
  // `insight`: "Where the time goes" chosen at first.
  ExportDialog(QSize size, QWidget* parent = nullptr, bool insight = false);

  std::optional<ChartKind> chart() const;   // nullopt: all charts as one image (or insight())
  bool insight() const;                     // a chart of "Where the time goes" ...
  std::optional<InsightChart> insight_chart() const;   // ... this one; nullopt: the whole page
  QSize size() const;

 private:
  QComboBox* what_;
  QComboBox* preset_;
  QSpinBox* width_;
  QSpinBox* height_;
};

}  // namespace mb
