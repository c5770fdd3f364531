// The application icon, drawn in code (two mirrored bar charts), so no image plugin is needed.
#pragma once
#include <QIcon>
#include <QImage>

namespace mb {

QImage app_icon_image(int side);
QIcon app_icon();

}  // namespace mb
