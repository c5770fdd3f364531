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

QStringList headline_lines(const QString& text, int line_chars) {
  if (text.size() <= line_chars) return {text};
  const qsizetype cut = best_break(text);
  if (cut < 0) return {text};
  QStringList lines;
  const QString first = text.left(cut).trimmed(), rest = text.mid(cut).trimmed();
  // Three lines at most: a longer text would crowd out the chart itself.
  lines << first;
  if (rest.size() > line_chars && text.size() > 2 * line_chars) lines << headline_lines(rest, line_chars);
  else lines << rest;
  while (lines.size() > 3) lines[2] += QLatin1Char(' ') + lines.takeLast();
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
