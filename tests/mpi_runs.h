// Running mirrorbench-cli under a launcher from a test: a child's exit code and output in
// bounded time, the processes a launcher started (by their MPI rank), whether one still
// lives. Shared by the one-host (test_mpi), two-host (test_two_hosts) and Slurm tests.
#pragma once
#include <QElapsedTimer>
#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>

#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "records/run_record.h"
#include "test_support.h"

namespace mb::test {

struct Result {
  int exit_code = -1;   // -1: killed at the timeout, or crashed
  QString out, err;
  double seconds = 0;
};

inline Result finish(QProcess& p, QElapsedTimer& t, int timeout_ms) {
  Result r;
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished(5000);
  }
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  r.seconds = t.elapsed() / 1000.0;
  return r;
}

inline Result run(const QString& program, const QStringList& args, int timeout_ms = 300000,
                  const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  QProcess p;
  p.setProcessEnvironment(env);
  QElapsedTimer t;
  t.start();
  p.start(program, args);
  return finish(p, t, timeout_ms);
}

// Live processes whose environment has `marker` (NAME=VALUE) and an MPI rank, by rank: the
// processes of one launch, wherever the launcher started them on this kernel.
inline std::map<int, pid_t> ranks_marked(const std::string& marker) {
  std::map<int, pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream env(e.path() / "environ", std::ios::binary);
    std::string var;
    int rank = -1;
    bool marked = false;
    while (std::getline(env, var, '\0')) {
      if (var.rfind("OMPI_COMM_WORLD_RANK=", 0) == 0) rank = std::stoi(var.substr(21));
      if (var.rfind("SLURM_PROCID=", 0) == 0 && rank < 0) rank = std::stoi(var.substr(13));
      if (var == marker) marked = true;
    }
    if (marked && rank >= 0) out[rank] = std::stoi(name);
  }
  return out;
}

// The children of `parent` (mpirun starts the local ranks itself) and their MPI ranks.
inline std::map<int, pid_t> ranks_of(pid_t parent) {
  std::map<int, pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state;
    pid_t ppid;
    rest >> state >> ppid;
    if (ppid != parent) continue;
    std::ifstream env(e.path() / "environ", std::ios::binary);
    std::string var;
    while (std::getline(env, var, '\0'))
      if (var.rfind("OMPI_COMM_WORLD_RANK=", 0) == 0) out[std::stoi(var.substr(21))] = std::stoi(name);
  }
  return out;
}

inline bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && line[close + 2] != 'Z';
}

#ifdef MB_CLI_PATH
// A test's scratch folder: synthetic IDX data in data/ (1024 training, 200 validation
// images), the CLI's `train` command line on it (a launcher's arguments go before it) and the
// records such runs write.
class TrainScratch {
 public:
  bool make() {
    if (!tmp_.isValid()) return false;
    data_ = tmp_.filePath("data");
    write_synthetic_idx_dir(data_.toStdString(), 1024, 200);
    return true;
  }
  QString path(const QString& name) const { return tmp_.filePath(name); }
  const QString& data() const { return data_; }
  QStringList train(const QStringList& more) const {
    return QStringList{MB_CLI_PATH, "train", "--data", data_, "--seed", "4"} + more;
  }
  RunRecord record(const QString& name) const { return read_run_json(path(name).toStdString()); }

 private:
  QTemporaryDir tmp_;
  QString data_;
};
#endif

}  // namespace mb::test
