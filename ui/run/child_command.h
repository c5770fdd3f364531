// How the workbench starts a run of several processes: `mpirun ... mirrorbench-cli train
// <the configuration as flags> --progress json`, the CLI found beside the GUI executable.
// Only the translation lives here (tested on its own); run/mpirun_trainer.h runs it.
#pragma once
#include <QString>
#include <QStringList>

#include <string>

#include "config/train_config.h"

namespace mb {

// The programs a multi-process run needs, found once: empty paths where they are missing.
struct Launcher {
  QString mpirun;            // on PATH
  QString cli;               // mirrorbench-cli beside the running executable
  bool as_root = false;      // Open MPI refuses root without --allow-run-as-root

  bool available() const { return problem().isEmpty(); }
  // Why multi-process runs cannot start here ("mpirun is not on PATH: install openmpi-bin ..."),
  // or empty.
  QString problem() const;
};

Launcher find_launcher();

// `mirrorbench-cli train` flags from the option table (every option, defaults included), so the
// child trains exactly what this process would: the data folder resolved
// (default_data_dir() when empty, so every process and host reads the same path), numbers
// written to be read back bit for bit. `trace_file` (may be empty): --trace, the Chrome trace
// that process 0 writes.
QStringList cli_train_args(const TrainConfig& config, const QString& trace_file = {});

struct ChildCommand {
  QString program;
  QStringList args;
  QString display() const;   // a shell-like line for the log
};

// `processes` copies of the CLI under mpirun. Without a hostfile everything stays on this
// machine (shared memory and loopback only, as test_mpi does); with one, mpirun's own choice
// of transports and the hosts it lists. Processes are left unbound (--bind-to none): the
// trainer pins each process's replicas to its share of the cores by local rank.
ChildCommand mpirun_command(const Launcher& launcher, const TrainConfig& config, int processes,
                            const std::string& hostfile, const QString& trace_file = {});

}  // namespace mb
