// The sweep for slides and spreadsheets: one PNG with the verdict, the table and the three
// charts; the core's CSV (sweep_csv) and JSON (to_json) of the finished configurations, the
// same files `mirrorbench-cli sweep --csv/--json` writes.
#pragma once
#include <QImage>
#include <QSize>
#include <QString>

#include "sweep/sweep_progress.h"

namespace mb {

// The table as simple HTML (for the PNG; the same cells as the on-screen table).
QString sweep_table_html(const SweepProgress& progress);
// The headline: the core's verdict, or what is still missing.
QString sweep_headline(const SweepProgress& progress);

QImage render_sweep_image(const SweepProgress& progress, QSize size);

// false with *error naming the file when it cannot be written (written atomically).
bool save_sweep_csv(const SweepProgress& progress, const QString& file, QString* error);
bool save_sweep_json(const SweepProgress& progress, const QString& file, QString* error);

}  // namespace mb
