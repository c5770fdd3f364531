// The primary run and the palette of shown runs.
#include "charts/shown_run.h"

#include <iterator>

namespace mb {

const ShownRun* primary_run(const std::vector<ShownRun>& runs) {
  for (const auto& r : runs) {
    if (!r.baseline) return &r;
  }
  return runs.empty() ? nullptr : &runs.front();
}

const ShownRun* baseline_of(const std::vector<ShownRun>& runs, const ShownRun& run) {
  if (run.baseline_id.empty()) return nullptr;
  for (const auto& r : runs)
    if (r.record.id == run.baseline_id && &r != &run) return &r;
  return nullptr;
}

QColor run_colour(int index) {
  // Okabe-Ito without black/yellow (poor on white), then Tableau extras.
  static const QColor colours[] = {QColor("#0072B2"), QColor("#D55E00"), QColor("#009E73"), QColor("#CC79A7"),
                                   QColor("#E69F00"), QColor("#56B4E9"), QColor("#8C564B"), QColor("#9467BD")};
  return colours[std::size_t(index) % std::size(colours)];
}

QColor baseline_colour(int index) {
  static const QColor greys[] = {QColor("#444444"), QColor("#7a7a7a"), QColor("#a0a0a0")};
  return greys[std::size_t(index) % std::size(greys)];
}

}  // namespace mb
