// The texts a chart renderer lays out - titles, axis titles, tick labels, legend entries, bar
// labels - and whether each had to be cut or left out to fit: the window promises none is, on
// screen and in every exported PNG, and the tests hold it to that. The renderers say what they
// laid out; while a TextRecorder is alive, the exports' renderers report into it.
#pragma once
#include <QString>

#include <vector>

class QChart;

namespace mb {

struct LaidOutText {
  QString text;          // as drawn ("0.5", "2 replicas", "Accuracy...")
  QString where;         // what it is, for a failure message: "tick label", "legend", ...
  bool cut = false;      // elided, clipped, or dropped for want of room
};

// Every text of a chart as Qt Charts laid it out (its title, axis titles and tick labels: Qt
// writes "..." where it cuts one and hides a tick label that would overlap its neighbour) and
// its legend's entries (charts/chart_legend.h). The chart must have been laid out.
std::vector<LaidOutText> laid_out_texts(const QChart* chart);

// Collects what the renderers of the exports lay out, on this thread, while it lives (the
// tests' window onto an export; no renderer pays more than a check that none is alive).
class TextRecorder {
 public:
  TextRecorder();
  ~TextRecorder();
  TextRecorder(const TextRecorder&) = delete;
  TextRecorder& operator=(const TextRecorder&) = delete;

  const std::vector<LaidOutText>& texts() const { return texts_; }
  std::vector<LaidOutText> cut() const;   // those cut or left out

 private:
  friend void report_laid_out(const std::vector<LaidOutText>& texts);
  TextRecorder* outer_;
  std::vector<LaidOutText> texts_;
};

// A renderer of an export reports what it laid out (nothing happens without a recorder).
void report_laid_out(const std::vector<LaidOutText>& texts);

}  // namespace mb
