// The page every PNG export paints on: an image of exactly the requested pixels, painted at
// a logical layout size and scaled up, with the title line and 2 x 2 grid of the overviews.
#pragma once
#include <QImage>
#include <QPainter>
#include <QRectF>
#include <QSize>
#include <QString>

#include <array>

namespace mb {

class ExportPage {
 public:
  // Content is laid out at `logical` and scaled up to `pixels`, so text and lines keep their
  // proportions on a 4K slide instead of turning into specks; pixels below half of `logical`
  // in a direction get that half, scaled down (a chart too small for its text would cut it).
  ExportPage(QSize pixels, QSize logical);
  ExportPage(const ExportPage&) = delete;
  ExportPage& operator=(const ExportPage&) = delete;

  QPainter& painter() { return painter_; }
  QRectF area() const { return area_; }   // the whole page, in logical units

  // Draws `title` on a line at the top and returns the four cells of the grid below it
  // (left to right, top to bottom), each inset by `inset`.
  std::array<QRectF, 4> title_and_grid(const QString& title, double inset = 4);
  // Draws a bordered white card holding rich text (the comparison card).
  void card(const QRectF& where, const QString& html);

  QImage finish();   // ends painting; the page is not used after this

 private:
  QImage image_;
  QPainter painter_;
  QRectF area_;
};

}  // namespace mb
