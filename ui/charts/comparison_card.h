// The comparison card beside the charts: the primary run against its baseline (mean epoch
// time, speedup, throughput, final accuracy) and the classic task's two criteria with the
// measured numbers. Simple HTML for QLabel/QTextDocument (the panel and the PNG export).
#pragma once
#include <QString>
#include <QStringList>

#include <string>
#include <vector>

#include "charts/shown_run.h"

namespace mb {

QString comparison_summary_html(const std::vector<ShownRun>& runs);

// The core's English texts (ReferenceVerdict::differences and the like) as Qt strings.
QStringList to_qstrings(const std::vector<std::string>& texts);

}  // namespace mb
