// Every export of the window asks for its file the same way and says the same when it is
// written: the save dialog opens in the folder of the last export (remembered between
// launches), and the written file's path shows in the window's status bar, so an export is
// confirmed where the user looks, not only in the Log tab.
#pragma once
#include <QString>

class QWidget;

namespace mb {

// The file to write, or empty when the user cancelled; `name` is the file name offered.
QString ask_export_file(QWidget* parent, const QString& title, const QString& name, const QString& filter);
// "Exported /path/to/file" in the status bar of `widget`'s window (and the log).
void confirm_export(QWidget* widget, const QString& file);

}  // namespace mb
