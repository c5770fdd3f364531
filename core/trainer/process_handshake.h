// Before a run across processes trains: every process loaded the data from its own disk and
// parsed its own command line, so they check, collectively, that they all train the same
// thing (the options every process must agree on, and the same bytes of data).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "comm/process_link.h"
#include "data/dataset.h"

namespace mb {

// The digest every process compares before training: same images and labels, same bytes.
uint64_t data_digest(const DataSplit& data);

// Collective over the link: throws ConfigError naming the process and host whose options
// (config_digest), replica count or kernels that decide the bits (`math_kernels`: oneDNN's
// instruction set and conv2's kernels on CPUs, which a host's hardware or environment may
// change under the same options) differ from process 0's, DataError for its data. Returns the
// run's hosts, distinct, in process order.
std::vector<std::string> check_processes_agree(ProcessLink& link, uint64_t config_digest, const DataSplit& data,
                                               int local_replicas, const std::string& host,
                                               const std::string& math_kernels = {});

}  // namespace mb
