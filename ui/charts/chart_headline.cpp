// Chart headlines broken into lines (see chart_headline.h).
#include "charts/chart_headline.h"

#include <QStringList>

#include <cstdlib>

namespace mb {
namespace {

// Where to break `text` closest to its middle: after a separator, else at a space (-1: none).
qsizetype best_break(const QString& text) {
  const qsizetype middle = text.size() / 2;
  qsizetype best = -1;
  for (const QString& sep : {QStringLiteral(": "), QStringLiteral(" · "), QStringLiteral(", "), QStringLiteral(" ("),
                             QStringLiteral(" ")}) {
    for (qsizetype at = text.indexOf(sep); at >= 0; at = text.indexOf(sep, at + 1)) {
      const qsizetype cut = sep == QStringLiteral(" (") ? at : at + sep.size();
      if (cut <= 0 || cut >= text.size()) continue;
      if (best < 0 || std::abs(cut - middle) < std::abs(best - middle)) best = cut;
    }
    // A separator within the middle third is better than any plain space.
    if (best >= 0 && std::abs(best - middle) <= text.size() / 6) return best;
  }
  return best;
}

}  // namespace

namespace {

// Halves at the best break until every part fits (or cannot be broken).
void split_to_fit(const QString& text, int line_chars, QStringList& out) {
  const qsizetype cut = text.size() <= line_chars ? -1 : best_break(text);
  if (cut < 0) {
    out << text;
    return;
  }
  split_to_fit(text.left(cut).trimmed(), line_chars, out);
  split_to_fit(text.mid(cut).trimmed(), line_chars, out);
}

}  // namespace

QStringList headline_lines(const QString& text, int line_chars) {
  QStringList lines;
  split_to_fit(text, line_chars, lines);
  // Three lines at most (a longer text would crowd out the chart itself): the two neighbours
  // that make the shortest line join, so no line grows longer than it must (a long scenario
  // label is not cut off at the chart's edge).
  while (lines.size() > 3) {
    int join = 0;
    for (int i = 1; i + 1 < int(lines.size()); ++i)
      if (lines[i].size() + lines[i + 1].size() < lines[join].size() + lines[join + 1].size()) join = i;
    lines[join] += QLatin1Char(' ') + lines[join + 1];
    lines.removeAt(join + 1);
  }
  return lines;
}

QString chart_headline(const QString& text, const QString& colour, double pt) {
  QStringList escaped;
  for (const QString& line : headline_lines(text)) escaped << line.toHtmlEscaped();
  return QStringLiteral("<br><span style='font-size:%1pt; color:%2'>%3</span>")
      .arg(pt)
      .arg(colour, escaped.join(QStringLiteral("<br>")));
}

}  // namespace mb
