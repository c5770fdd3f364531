// Export files: the remembered folder and the confirmation (see export_file.h).
#include "common/export_file.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMainWindow>
#include <QStatusBar>

#include <spdlog/spdlog.h>

#include "common/settings_file.h"

namespace mb {
namespace {

constexpr auto kFolderKey = "export/folder";
constexpr int kConfirmMs = 15000;

}  // namespace

QString ask_export_file(QWidget* parent, const QString& title, const QString& name, const QString& filter) {
  const auto settings = open_settings();
  QString folder = settings->value(kFolderKey).toString();
  if (folder.isEmpty() || !QFileInfo(folder).isDir()) folder = QDir::currentPath();
  const QString file = QFileDialog::getSaveFileName(parent, title, QDir(folder).filePath(name), filter);
  if (!file.isEmpty()) settings->setValue(kFolderKey, QFileInfo(file).absolutePath());
  return file;
}

void confirm_export(QWidget* widget, const QString& file) {
  const QString text = QObject::tr("Exported %1").arg(QDir::toNativeSeparators(QFileInfo(file).absoluteFilePath()));
  spdlog::info("{}", text.toStdString());
  if (auto* window = qobject_cast<QMainWindow*>(widget ? widget->window() : nullptr))
    window->statusBar()->showMessage(text, kConfirmMs);
}

}  // namespace mb
