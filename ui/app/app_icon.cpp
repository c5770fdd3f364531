// Application icon drawing.
#include "app/app_icon.h"

#include <QPainter>
#include <QPainterPath>

namespace mb {

QImage app_icon_image(int side) {
  QImage img(side, side, QImage::Format_ARGB32_Premultiplied);
  img.fill(Qt::transparent);
  QPainter p(&img);
  p.setRenderHint(QPainter::Antialiasing);
  p.scale(side / 64.0, side / 64.0);
  QPainterPath bg;
  bg.addRoundedRect(QRectF(2, 2, 60, 60), 12, 12);
  p.fillPath(bg, QColor("#0b3d5c"));
  // Two replicas (mirrored bars) meeting in the middle: the all-reduce.
  const double heights[] = {14, 24, 34, 44};
  for (int i = 0; i < 4; ++i) {
    const double h = heights[i];
    p.fillRect(QRectF(8 + i * 6, 54 - h, 4.5, h), QColor("#56B4E9"));
    p.fillRect(QRectF(51.5 - i * 6, 54 - h, 4.5, h), QColor("#E69F00"));
  }
  p.setPen(QPen(Qt::white, 2.5, Qt::SolidLine, Qt::RoundCap));
  p.drawLine(QPointF(30, 10), QPointF(34, 10));
  p.drawLine(QPointF(32, 10), QPointF(32, 54));
  return img;
}

QIcon app_icon() {
  QIcon icon;
  for (int side : {16, 32, 48, 64, 128, 256}) icon.addPixmap(QPixmap::fromImage(app_icon_image(side)));
  return icon;
}

}  // namespace mb
