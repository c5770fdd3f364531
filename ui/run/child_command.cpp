// The mpirun command line of a multi-process run (see child_command.h).
#include "run/child_command.h"

#include <unistd.h>

#include <QCoreApplication>
#include <QFileInfo>
#include <QRegularExpression>
#include <QStandardPaths>

#include "config/train_options.h"
#include "data/dataset.h"

namespace mb {

QString Launcher::problem() const {
  if (mpirun.isEmpty())
    return QCoreApplication::translate("mb::Launcher",
                                       "mpirun is not on PATH: install openmpi-bin (Open MPI) to run across processes");
  if (cli.isEmpty())
    return QCoreApplication::translate("mb::Launcher",
                                       "mirrorbench-cli is not beside the workbench (%1): multi-process runs start it "
                                       "under mpirun")
        .arg(QCoreApplication::applicationDirPath());
  return {};
}

Launcher find_launcher() {
  Launcher l;
  l.mpirun = QStandardPaths::findExecutable(QStringLiteral("mpirun"));
  const QFileInfo cli(QCoreApplication::applicationDirPath() + QStringLiteral("/mirrorbench-cli"));
  if (cli.isFile() && cli.isExecutable()) l.cli = cli.absoluteFilePath();
  l.as_root = ::geteuid() == 0;
  return l;
}

QStringList cli_train_args(const TrainConfig& config, const QString& trace_file) {
  TrainConfig c = config;
  if (c.data_dir.empty()) c.data_dir = default_data_dir().string();
  c.trace = false;   // --trace FILE says it
  QStringList a{QStringLiteral("train")};
  for (const std::string& arg : option_arguments(c)) a << QString::fromStdString(arg);
  if (!trace_file.isEmpty()) a << QStringLiteral("--trace") << trace_file;
  a << QStringLiteral("--progress") << QStringLiteral("json");
  return a;
}

ChildCommand mpirun_command(const Launcher& launcher, const TrainConfig& config, int processes,
                            const std::string& hostfile, const QString& trace_file) {
  ChildCommand cmd;
  cmd.program = launcher.mpirun;
  if (launcher.as_root) cmd.args << QStringLiteral("--allow-run-as-root");
  cmd.args << QStringLiteral("-np") << QString::number(processes) << QStringLiteral("--bind-to")
           << QStringLiteral("none");
  if (hostfile.empty()) {
    // This machine only: no network interface is touched. The panel already refused more
    // replicas than cores, so oversubscribing only overrides Open MPI's count of physical
    // cores as slots (fewer than the logical CPUs on an SMT machine).
    cmd.args << QStringLiteral("--mca") << QStringLiteral("btl") << QStringLiteral("self,vader")
             << QStringLiteral("--mca") << QStringLiteral("oob_tcp_if_include") << QStringLiteral("lo")
             << QStringLiteral("--oversubscribe");
  } else {
    cmd.args << QStringLiteral("--hostfile") << QString::fromStdString(hostfile);
  }
  cmd.args << launcher.cli << cli_train_args(config, trace_file);
  return cmd;
}

QString ChildCommand::display() const {
  QStringList words{program};
  for (const QString& a : args) {
    const bool plain = !a.isEmpty() && !a.contains(QRegularExpression(QStringLiteral("[^A-Za-z0-9_./:,=+-]")));
    words << (plain ? a : QStringLiteral("'%1'").arg(QString(a).replace(QStringLiteral("'"), QStringLiteral("'\\''"))));
  }
  return words.join(' ');
}

}  // namespace mb
