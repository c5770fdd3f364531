// The classroom picture of one step (see step_painter.h). Everything is laid out in logical
// pixels of a 1600 x 900 canvas; one scale maps it onto the target.
#include "teach/step_painter.h"

#include <QFontDatabase>
#include <QFontMetricsF>
#include <QLocale>
#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>

#include "data/dataset.h"

namespace mb {

namespace {

constexpr double kW = 1600, kH = 900, kMargin = 30;
const QColor kInk(0x11, 0x11, 0x11);
const QColor kSoftInk(0x33, 0x33, 0x33);

QString number(int64_t n) { return QLocale(QLocale::English).toString(qlonglong(n)); }

QString glossary_tip(std::initializer_list<const char*> terms) {
  QStringList lines;
  for (const char* t : terms) {
    const QString term = QObject::tr(t);
    const QString text = explain(term);
    if (!text.isEmpty()) lines << QStringLiteral("<b>%1</b>: %2").arg(term.toHtmlEscaped(), text.toHtmlEscaped());
  }
  return lines.join(QStringLiteral("<br>"));
}

// The exchange's terms, and the remedies' where the run uses them.
QString exchange_tip(const StepPicture& pic) {
  QString tip = glossary_tip({"all-reduce", "bytes", "gradient"});
  if (pic.accumulating) tip += QStringLiteral("<br>") + glossary_tip({"gradient accumulation"});
  if (pic.compressed) tip += QStringLiteral("<br>") + glossary_tip({"compression"});
  return tip;
}

// Paints in canvas coordinates and records what it drew in target coordinates.
class Pen {
 public:
  Pen(QPainter& p, const QTransform& to_target, StepCanvas* canvas) : p_(p), to_target_(to_target), canvas_(canvas) {}

  QFont font(double px, bool bold = false, bool mono = false) const {
    QFont f = mono ? QFontDatabase::systemFont(QFontDatabase::FixedFont) : QFont();
    f.setPixelSize(int(std::lround(px)));
    f.setBold(bold);
    f.setHintingPreference(QFont::PreferNoHinting);   // the same widths at every scale
    return f;
  }

  // Draws `text` in `r`, shrinking the font until it fits (one line unless `wrap`).
  void text(const QRectF& r, const QString& s, double px, const QColor& colour, bool bold = false, int align = Qt::AlignLeft | Qt::AlignVCenter,
            const QString& tip = {}, bool mono = false, bool wrap = false) {
    if (s.isEmpty()) return;
    QFont f = font(px, bold, mono);
    const int flags = align | (wrap ? Qt::TextWordWrap : 0);
    for (double size = px; size > 9; size -= 1) {
      f.setPixelSize(int(std::lround(size)));
      const QRectF need = QFontMetricsF(f).boundingRect(QRectF(0, 0, r.width(), 10000), flags, s);
      if (need.width() <= r.width() * 0.98 && need.height() <= r.height()) break;
    }
    p_.setFont(f);
    p_.setPen(colour);
    p_.drawText(r, flags, s);
    if (canvas_) canvas_->texts << s;
    hot(r, tip);
  }

  void hot(const QRectF& r, const QString& tip) {
    if (canvas_ && !tip.isEmpty()) canvas_->hot.push_back({to_target_.mapRect(r), tip});
  }

  QPainter& painter() { return p_; }

 private:
  QPainter& p_;
  QTransform to_target_;
  StepCanvas* canvas_;
};

// The image as it is: grey, or colour from the first three planes (C, H, W) of a colour set.
QImage thumbnail(const Dataset& d, int32_t index) {
  if (index < 0 || index >= d.count || d.rows <= 0 || d.cols <= 0) return {};
  if (d.channels < 3) {
    QImage img(d.image(index), d.cols, d.rows, d.cols, QImage::Format_Grayscale8);
    return img.copy();   // QImage over foreign bytes: copy before the data set can go
  }
  const uint8_t* planes = d.image(index);
  const int64_t plane = int64_t(d.rows) * d.cols;
  QImage img(d.cols, d.rows, QImage::Format_RGB32);
  for (int y = 0; y < d.rows; ++y)
    for (int x = 0; x < d.cols; ++x) {
      const int64_t at = int64_t(y) * d.cols + x;
      img.setPixel(x, y, qRgb(planes[at], planes[plane + at], planes[2 * plane + at]));
    }
  return img;
}

// The share's images in a grid; the last cell says how many did not fit.
void draw_thumbnails(Pen& pen, const QRectF& area, const StepPicture& pic, const ReplicaPicture& rp, int replica,
                     const Dataset* images, const std::string& dataset) {
  QPainter& p = pen.painter();
  std::vector<int32_t> indices;
  for (int64_t k = rp.share_begin; k < rp.share_begin + rp.share_count && k < int64_t(pic.samples.size()); ++k)
    indices.push_back(pic.samples[std::size_t(k)]);
  const int64_t total = rp.share_count;
  if (total <= 0) {
    pen.text(area, QObject::tr("no images"), 22, kSoftInk, false, Qt::AlignCenter);
    return;
  }
  double t = 72;
  int cols = 1, rows = 1;
  for (; t >= 22; t -= 2) {
    cols = std::max(1, int((area.width() + 4) / (t + 4)));
    rows = std::max(1, int((area.height() + 4) / (t + 4)));
    if (int64_t(cols) * rows >= total) break;
  }
  t = std::max(t, 22.0);
  const int64_t capacity = int64_t(cols) * rows;
  const bool overflow = total > capacity;
  const int64_t shown = overflow ? capacity - 1 : total;
  const double gx = 4;
  for (int64_t k = 0; k < shown; ++k) {
    const QRectF cell(area.left() + double(k % cols) * (t + gx), area.top() + double(k / cols) * (t + 4), t, t);
    const bool known = k < int64_t(indices.size());
    const int32_t index = known ? indices[std::size_t(k)] : -1;
    const QImage img = known && images ? thumbnail(*images, index) : QImage();
    if (!img.isNull()) {
      p.drawImage(cell, img);
    } else {
      p.fillRect(cell, QColor(0xcf, 0xd8, 0xdc));
    }
    p.setPen(QPen(replica_colour(replica), 2));
    p.setBrush(Qt::NoBrush);
    p.drawRect(cell);
    QString tip;
    if (known) {
      tip = QObject::tr("Image %1 of the training set").arg(number(index));
      if (images && index < images->count)
        tip += QStringLiteral(": ") + label_name(dataset, images->labels[std::size_t(index)]);
      tip += QObject::tr(" (replica %1's share)").arg(replica);
    } else {
      tip = QObject::tr("Image %1 of this step (beyond the first %2 the trainer lists)")
                .arg(number(rp.share_begin + k + 1), number(int64_t(pic.samples.size())));
    }
    pen.hot(cell, tip);
  }
  if (overflow) {
    const int64_t k = shown;
    const QRectF cell(area.left() + double(k % cols) * (t + gx), area.top() + double(k / cols) * (t + 4), t, t);
    pen.text(cell, QObject::tr("+%1").arg(number(total - shown)), t * 0.36, replica_colour(replica), true, Qt::AlignCenter,
             QObject::tr("%1 more images in this share").arg(number(total - shown)));
  }
}

void down_arrow(QPainter& p, double x, double y0, double y1, const QColor& c) {
  p.setPen(QPen(c, 4));
  p.drawLine(QPointF(x, y0), QPointF(x, y1 - 10));
  QPainterPath head;
  head.moveTo(x - 10, y1 - 12);
  head.lineTo(x + 10, y1 - 12);
  head.lineTo(x, y1);
  head.closeSubpath();
  p.fillPath(head, c);
}

void paint_idle(Pen& pen, const QString& idle_text) {
  pen.text(QRectF(kMargin, 250, kW - 2 * kMargin, 90), QObject::tr("One training step, as it happens"), 48, kInk, true,
           Qt::AlignCenter);
  pen.text(QRectF(kMargin + 100, 360, kW - 2 * kMargin - 200, 300), idle_text, 28, kSoftInk, false,
           Qt::AlignHCenter | Qt::AlignTop, {}, false, true);
}

}  // namespace

QString StepCanvas::tip_at(const QPointF& at) const {
  for (auto it = hot.rbegin(); it != hot.rend(); ++it)
    if (it->rect.contains(at)) return it->tip;
  return {};
}

QColor replica_colour(int r) {
  static const QColor colours[] = {QColor(0x15, 0x65, 0xc0), QColor(0xd8, 0x43, 0x15), QColor(0x2e, 0x7d, 0x32),
                                   QColor(0x6a, 0x1b, 0x9a), QColor(0x00, 0x83, 0x8f), QColor(0xad, 0x14, 0x57),
                                   QColor(0x5d, 0x40, 0x37), QColor(0x37, 0x47, 0x4f)};
  return colours[std::size_t(r) % std::size(colours)];
}

void paint_step(QPainter& painter, const QRectF& target, const StepPicture& pic, const Dataset* images,
                const std::string& dataset, const QString& idle_text, StepCanvas* canvas) {
  if (canvas) *canvas = StepCanvas{};
  painter.save();
  painter.fillRect(target, Qt::white);
  const double scale = std::min(target.width() / kW, target.height() / kH);
  const QPointF origin(target.left() + (target.width() - kW * scale) / 2, target.top() + (target.height() - kH * scale) / 2);
  QTransform to_target;
  to_target.translate(origin.x(), origin.y());
  to_target.scale(scale, scale);
  painter.setTransform(to_target, true);
  painter.setRenderHint(QPainter::Antialiasing);
  painter.setRenderHint(QPainter::TextAntialiasing);
  painter.setRenderHint(QPainter::SmoothPixmapTransform, false);   // pixels stay pixels: these are 28 x 28 images
  Pen pen(painter, to_target, canvas);

  if (pic.empty) {
    paint_idle(pen, idle_text);
    painter.restore();
    return;
  }

  const double inner = kW - 2 * kMargin;
  const int n = std::max<int>(1, int(pic.replicas.size()));
  const double col_w = inner / n, gap = n > 4 ? 10 : 18;
  auto column = [&](int r, double y, double h) { return QRectF(kMargin + r * col_w, y, col_w - gap, h); };

  // Heading.
  pen.text(QRectF(kMargin, 14, inner * 0.55, 56), pic.heading, 38, kInk, true);
  pen.text(QRectF(kMargin + inner * 0.55, 14, inner * 0.45, 30), pic.run_text, 22, kSoftInk, false,
           Qt::AlignRight | Qt::AlignVCenter);
  if (!pic.paced_text.isEmpty())
    pen.text(QRectF(kMargin + inner * 0.55, 44, inner * 0.45, 28), pic.paced_text, 20, QColor(0xb2, 0x4d, 0x00), true,
             Qt::AlignRight | Qt::AlignVCenter, glossary_tip({"teaching pace"}));

  // 1. The batch and its shares.
  pen.text(QRectF(kMargin, 82, inner, 40), QStringLiteral("\u2460 ") + pic.batch_text, 28, kInk, true,
           Qt::AlignLeft | Qt::AlignVCenter, glossary_tip({"global batch", "share", "replica"}));
  for (int r = 0; r < int(pic.replicas.size()); ++r) {
    const ReplicaPicture& rp = pic.replicas[std::size_t(r)];
    const QRectF box = column(r, 126, 214);
    painter.setPen(QPen(replica_colour(r), 4));
    painter.setBrush(Qt::NoBrush);
    painter.drawRoundedRect(box, 8, 8);
    pen.text(QRectF(box.left() + 12, box.top() + 6, box.width() - 24, 32), rp.name + QStringLiteral(": ") + rp.share_text,
             24, replica_colour(r), true, Qt::AlignLeft | Qt::AlignVCenter, glossary_tip({"replica", "share"}));
    draw_thumbnails(pen, QRectF(box.left() + 12, box.top() + 44, box.width() - 24, box.height() - 54), pic, rp, r, images,
                    dataset);
  }

  // 2. Each replica on its own.
  pen.text(QRectF(kMargin, 352, inner, 40),
           QObject::tr("\u2461 Each replica on its own share: forward, loss, backward \u2192 its own gradient"), 28, kInk, true,
           Qt::AlignLeft | Qt::AlignVCenter, glossary_tip({"forward", "loss", "backward", "gradient"}));
  for (int r = 0; r < int(pic.replicas.size()); ++r) {
    const ReplicaPicture& rp = pic.replicas[std::size_t(r)];
    const QRectF card = column(r, 396, 196);
    QColor tint = replica_colour(r);
    tint.setAlpha(24);
    painter.setPen(QPen(replica_colour(r), 3));
    painter.setBrush(tint);
    painter.drawRoundedRect(card, 8, 8);
    const double x = card.left() + 14, w = card.width() - 28;
    pen.text(QRectF(x, card.top() + 6, w, 32), rp.name + QStringLiteral(" · ") + rp.device, 22, replica_colour(r), true,
             Qt::AlignLeft | Qt::AlignVCenter, glossary_tip({"replica"}));
    pen.text(QRectF(x, card.top() + 40, w, 46), rp.loss_text, 38, kInk, true, Qt::AlignLeft | Qt::AlignVCenter,
             glossary_tip({"loss"}));
    pen.text(QRectF(x, card.top() + 88, w, 30), rp.correct_text, 24, kInk, false, Qt::AlignLeft | Qt::AlignVCenter,
             QObject::tr("How many of this replica's images the model classified correctly, before this step's update"));
    pen.text(QRectF(x, card.top() + 120, w, 34), rp.grad_text, 28, kInk, true, Qt::AlignLeft | Qt::AlignVCenter,
             glossary_tip({"gradient", "gradient norm"}));
    pen.text(QRectF(x, card.top() + 158, w, 28), rp.compute_text, 20, kSoftInk, false, Qt::AlignLeft | Qt::AlignVCenter,
             glossary_tip({"forward", "backward"}));
  }

  // 3. The all-reduce: one band across every replica, arrows in and out.
  const QRectF band(kMargin, 624, inner - gap, 82);
  for (int r = 0; r < int(pic.replicas.size()); ++r) down_arrow(painter, column(r, 0, 0).center().x(), 594, 624, replica_colour(r));
  painter.setPen(Qt::NoPen);
  painter.setBrush(QColor(0x26, 0x32, 0x38));
  painter.drawRoundedRect(band, 10, 10);
  pen.text(band.adjusted(20, 4, -20, -4), QStringLiteral("\u2462 ") + pic.allreduce_text, 27, Qt::white, true,
           Qt::AlignLeft | Qt::AlignVCenter, exchange_tip(pic), false, true);
  for (int r = 0; r < int(pic.replicas.size()); ++r)
    down_arrow(painter, column(r, 0, 0).center().x(), 706, 736, replica_colour(r));

  // 4. The same update everywhere: the digests, then the verdict.
  for (int r = 0; r < int(pic.replicas.size()); ++r) {
    const ReplicaPicture& rp = pic.replicas[std::size_t(r)];
    const QRectF cell = column(r, 738, 80);
    painter.setPen(QPen(replica_colour(r), 3));
    painter.setBrush(Qt::NoBrush);
    painter.drawRoundedRect(cell, 8, 8);
    pen.text(QRectF(cell.left() + 12, cell.top() + 4, cell.width() - 24, 30),
             QStringLiteral("\u2463 ") + rp.update_text + QObject::tr(" \u2192 digest"), 20, kSoftInk, false,
             Qt::AlignLeft | Qt::AlignVCenter, glossary_tip({"Adam update", "digest"}));
    pen.text(QRectF(cell.left() + 12, cell.top() + 36, cell.width() - 24, 40), rp.digest, 30, kInk, true,
             Qt::AlignLeft | Qt::AlignVCenter, glossary_tip({"digest"}), true);
  }
  const QRectF verdict(kMargin, 830, inner - gap, 60);
  painter.setPen(Qt::NoPen);
  painter.setBrush(pic.identical ? QColor(0x1b, 0x5e, 0x20) : QColor(0xb7, 0x1c, 0x1c));
  painter.drawRoundedRect(verdict, 10, 10);
  pen.text(verdict.adjusted(20, 2, -20, -2), (pic.identical ? QStringLiteral("\u2714 ") : QStringLiteral("\u2718 ")) + pic.verdict_text,
           30, Qt::white, true, Qt::AlignLeft | Qt::AlignVCenter, glossary_tip({"identical", "digest"}));
  painter.restore();
}

QImage render_step_image(const StepPicture& picture, const Dataset* images, const std::string& dataset,
                         const QString& idle_text, QSize size) {
  QImage image(size, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::white);
  QPainter painter(&image);
  paint_step(painter, QRectF(QPointF(0, 0), QSizeF(size)), picture, images, dataset, idle_text);
  return image;
}

}  // namespace mb
