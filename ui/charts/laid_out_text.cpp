// What the chart renderers laid out, and the recorder of the exports' texts (see laid_out_text.h).
#include "charts/laid_out_text.h"

#include <QChart>
#include <QGraphicsSimpleTextItem>
#include <QGraphicsTextItem>

#include "charts/chart_legend.h"

namespace mb {

namespace {

thread_local TextRecorder* current_recorder = nullptr;

// Qt Charts' items of one chart, depth first (its axes, title and the hidden QLegend's markers).
void collect(const QGraphicsItem* item, std::vector<LaidOutText>& out) {
  for (const QGraphicsItem* child : item->childItems()) {
    if (dynamic_cast<const ChartLegend*>(child)) continue;   // ours: listed from its layout below
    QString text;
    if (const auto* t = dynamic_cast<const QGraphicsTextItem*>(child)) text = t->toPlainText();
    else if (const auto* s = dynamic_cast<const QGraphicsSimpleTextItem*>(child)) text = s->text();
    // Qt Charts hides a whole QLegend, or one tick label that would overlap the one before it
    // (or is taller than its share of the axis): only the latter is a text left out.
    const bool dropped = !child->isVisible() && child->parentItem() && child->parentItem()->isVisible();
    if (!text.isEmpty() && (child->isVisible() || dropped))
      out.push_back({text, dropped ? QStringLiteral("hidden text") : QStringLiteral("chart text"),
                     dropped || text.contains(QStringLiteral("..."))});   // Qt's truncatedText() ends in "..."
    collect(child, out);
  }
}

}  // namespace

std::vector<LaidOutText> laid_out_texts(const QChart* chart) {
  std::vector<LaidOutText> out;
  collect(chart, out);
  if (const ChartLegend* legend = ChartLegend::of(chart)) {
    const LegendLayout& l = legend->layout();
    for (const LegendLayout::Placed& p : l.entries)
      out.push_back({p.words, QStringLiteral("legend"), p.words_width > p.text.width() + 0.5});
  }
  return out;
}

TextRecorder::TextRecorder() : outer_(current_recorder) { current_recorder = this; }

TextRecorder::~TextRecorder() { current_recorder = outer_; }

std::vector<LaidOutText> TextRecorder::cut() const {
  std::vector<LaidOutText> out;
  for (const LaidOutText& t : texts_)
    if (t.cut) out.push_back(t);
  return out;
}

void report_laid_out(const std::vector<LaidOutText>& texts) {
  if (current_recorder) current_recorder->texts_.insert(current_recorder->texts_.end(), texts.begin(), texts.end());
}

}  // namespace mb
