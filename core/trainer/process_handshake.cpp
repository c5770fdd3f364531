// The processes' check of each other (see process_handshake.h).
#include "trainer/process_handshake.h"

#include <algorithm>
#include <cstring>
#include <set>

#include <unistd.h>

#include <fmt/format.h>

#include "util/digest.h"
#include "util/error.h"

namespace mb {
namespace {

// What every process tells the others (fixed size: all-gathered as bytes).
struct ProcessWire {
  char host[64];
  char data_dir[192];
  char kernels[96];
  uint64_t data_digest;
  uint64_t config_digest;
  int64_t train_count, val_count;
  int32_t pid, local_replicas;
};

template <std::size_t N>
void copy_text(char (&dst)[N], const std::string& src) {
  std::memset(dst, 0, N);
  std::memcpy(dst, src.data(), std::min(N - 1, src.size()));
}

}  // namespace

uint64_t data_digest(const DataSplit& data) {
  Digest d;
  for (const Dataset* s : {&data.train, &data.val}) {
    const int64_t shape[3] = {s->count, s->rows, s->cols};
    d.add(shape, sizeof shape).add(s->pixels.data(), s->pixels.size()).add(s->labels.data(), s->labels.size());
  }
  return d.value();
}

std::vector<std::string> check_processes_agree(ProcessLink& link, uint64_t config_digest, const DataSplit& data,
                                               int local_replicas, const std::string& host,
                                               const std::string& math_kernels) {
  const int processes = link.info().processes;
  ProcessWire mine{};
  copy_text(mine.host, host);
  copy_text(mine.data_dir, data.dir.string());
  copy_text(mine.kernels, math_kernels);
  mine.data_digest = data_digest(data);
  mine.config_digest = config_digest;
  mine.train_count = data.train.count;
  mine.val_count = data.val.count;
  mine.pid = static_cast<int32_t>(getpid());
  mine.local_replicas = local_replicas;
  std::vector<ProcessWire> all(static_cast<std::size_t>(processes));
  link.all_gather(&mine, sizeof mine, all.data());

  std::vector<std::string> hosts;
  std::set<std::string> seen;
  const ProcessWire& first = all[0];
  for (int p = 0; p < processes; ++p) {
    const ProcessWire& w = all[std::size_t(p)];
    if (seen.insert(w.host).second) hosts.push_back(w.host);
    MB_CHECK(w.config_digest == first.config_digest && w.local_replicas == first.local_replicas, ConfigError,
             "process {} on host {} was started with other training options than process 0 on host {}: give "
             "every process the same command line",
             p, w.host, first.host);
    MB_CHECK(std::strncmp(w.kernels, first.kernels, sizeof w.kernels) == 0, ConfigError,
             "process {} on host {} computes with {} where process 0 on host {} computes with {}: their sums would "
             "differ; give every process the same --onednn-isa (the widest both hosts run) and --cpu-conv2",
             p, w.host, w.kernels, first.host, first.kernels);
    MB_CHECK(w.data_digest == first.data_digest, DataError,
             "the data set of process {} on host {} ('{}', {} training and {} validation images) differs from "
             "process 0's on host {} ('{}', {} and {} images): every process must load the same files",
             p, w.host, w.data_dir, w.train_count, w.val_count, first.host, first.data_dir, first.train_count,
             first.val_count);
  }
  return hosts;
}

}  // namespace mb
