// Fields inside a scroll area take the mouse wheel only once focused. Qt's default lets a
// spin box or combo box under the pointer take every wheel turn, so a user scrolling the setup
// column past "Epochs" changed the epochs (seen under Xvfb); unfocused, the wheel now scrolls
// the column, and a click (or Tab) on the field gives it the wheel again.
#pragma once

class QWidget;

namespace mb {

// For every spin box and combo box under `root` (those that exist now).
void scroll_past_unfocused_fields(QWidget* root);

}  // namespace mb
