// Draws one training step (a StepPicture) for a lecture room: the batch's real images split
// into the replicas' shares, each replica's own numbers, the all-reduce, the identical update.
// Laid out on a 16:9 canvas and scaled to any target, so the tab, a full-screen window and a
// PNG for slides show the same picture. Large type, black on white, one strong colour per
// replica.
#pragma once
#include <QImage>
#include <QRectF>
#include <QSize>
#include <QString>
#include <QStringList>

#include <string>
#include <vector>

#include "teach/step_picture.h"

class QPainter;

namespace mb {

struct Dataset;

// What a painted step holds, in the target's coordinates: the places that explain a word or
// an image when hovered, and every text drawn (for tests and accessibility).
struct StepCanvas {
  struct Hot {
    QRectF rect;
    QString tip;
  };
  std::vector<Hot> hot;
  QStringList texts;
  QString tip_at(const QPointF& at) const;   // the innermost (last drawn) region's tip
};

// `images`: the run's training images (null: grey tiles with the image numbers instead);
// `dataset`: its name, for the label names in the thumbnails' tooltips. `idle_text`: what an
// empty picture says.
void paint_step(QPainter& painter, const QRectF& target, const StepPicture& picture, const Dataset* images,
                const std::string& dataset, const QString& idle_text, StepCanvas* canvas = nullptr);

QImage render_step_image(const StepPicture& picture, const Dataset* images, const std::string& dataset,
                         const QString& idle_text, QSize size);

// The replica colours (strong, distinct, readable on white and as text).
QColor replica_colour(int replica);

}  // namespace mb
