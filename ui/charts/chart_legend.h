// The charts' legend, ours rather than Qt Charts': its entries wrap into as many centred rows as
// the width needs and are never cut (QLegend keeps one row and elides every entry to fit it:
// "cp… cp… cp…"). One layout for the window, where the legend sits under a QChart's plot with
// each entry's full name as its tooltip, and for the painters of the PNG exports and of the bar
// charts of "Where the time goes".
#pragma once
#include <QFont>
#include <QGraphicsObject>
#include <QPen>
#include <QRectF>
#include <QString>

#include <vector>

class QChart;
class QPainter;

namespace mb {

// One entry: a sample of what it stands for, and its words.
struct LegendItem {
  enum class Sample { Line, Box };
  QString text;                    // a run's short name, "validation", "compute"
  QString full;                    // its full name: the tooltip, and an export's words (empty: text)
  Sample sample = Sample::Line;
  QPen pen;                        // Line: a stretch of this pen; Box: its colour fills the box
  double marker = 0;               // > 0: a dot of this diameter on the line (the series' points)
};

enum class LegendNames { Short, Full };   // the window's legend, or an export's

// Where each entry goes: rows of at most `width`, centred, in order; an entry wider than a whole
// row has its words wrapped at spaces. Coordinates from the legend's top left.
struct LegendLayout {
  struct Placed {
    QRectF sample, text;
    QString words;                 // what is drawn in `text` (wrapped there when wider)
    double words_width = 0;        // the widest line of the words as drawn: never above text.width()
  };
  std::vector<Placed> entries;
  double height = 0;
};
LegendLayout layout_legend(const std::vector<LegendItem>& items, LegendNames names, const QFont& font, double width);
// Draws the entries laid out by layout_legend, `origin` being the legend's top left.
void paint_legend(QPainter& painter, const std::vector<LegendItem>& items, const LegendLayout& layout,
                  const QFont& font, QPointF origin, const QColor& text_colour = QColor(0x33, 0x33, 0x33));

// The legend of a QChart, in place of Qt Charts' own (hidden): a graphics item along the chart's
// bottom that the chart's bottom margin makes room for, laid out again whenever the chart's
// width changes; hovering an entry shows its full name.
class ChartLegend : public QGraphicsObject {
  Q_OBJECT
 public:
  // Makes `chart` show `items` (a legend is created the first time); the chart's margins as set
  // before the first call are kept around the legend.
  static ChartLegend* set(QChart* chart, std::vector<LegendItem> items, LegendNames names = LegendNames::Short);
  // The chart's legend, or nullptr before set().
  static const ChartLegend* of(const QChart* chart);

  const std::vector<LegendItem>& items() const { return items_; }
  const LegendLayout& layout() const { return layout_; }
  LegendNames names() const { return names_; }
  QFont font() const { return font_; }

  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 protected:
  void hoverMoveEvent(QGraphicsSceneHoverEvent* event) override;

 private:
  explicit ChartLegend(QChart* chart);
  static ChartLegend* find(const QChart* chart);
  void relayout();

  QChart* chart_;
  QMargins base_margins_;
  QFont font_;
  std::vector<LegendItem> items_;
  LegendNames names_ = LegendNames::Short;
  LegendLayout layout_;
  double width_ = 0;
};

}  // namespace mb
