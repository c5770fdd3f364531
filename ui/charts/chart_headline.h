// The coloured line under a chart's title (Qt Charts titles are rich text and elide what does
// not fit): long texts are broken at the separator nearest their middle, so a headline such
// as "cpu:2 · simulated straggler r1 ×3: +68 % vs baseline (0.41 s → 0.68 s)" stays whole
// in a chart a third of a laptop screen wide.
#pragma once
#include <QString>

namespace mb {

// "<br><span ...>line<br>line</span>", to append to a chart title.
QString chart_headline(const QString& text, const QString& colour = QStringLiteral("#444444"), double pt = 10);

// The text in lines of about `line_chars` characters (at most three), broken after ": ",
// " · ", ", " or before " (", else at a space.
QStringList headline_lines(const QString& text, int line_chars = 46);

}  // namespace mb
