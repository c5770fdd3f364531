// The workbench run as a child process in scripted mode (offscreen, its own history folder):
// how the GUI tests check exit statuses and the files a scripted run writes.
#pragma once
#include <QCoreApplication>
#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

namespace mb::test {

// The mirrorbench executable this test was built with (MB_GUI_PATH), else the one beside it.
inline QString gui_program() {
#ifdef MB_GUI_PATH
  return QStringLiteral(MB_GUI_PATH);
#else
  return QCoreApplication::applicationDirPath() + "/mirrorbench";
#endif
}

// Its exit status; -1 when it ran past timeout_ms (it is killed), -2 when it crashed.
inline int run_gui(const QString& program, const QStringList& args, const QString& home, int timeout_ms) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("QT_QPA_PLATFORM", "offscreen");
  env.insert("MIRRORBENCH_HOME", home);
  p.setProcessEnvironment(env);
  p.start(program, args);
  if (!p.waitForFinished(timeout_ms)) return -1;
  return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
}

}  // namespace mb::test
