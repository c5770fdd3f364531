// The fuzz targets' bodies, shared by the libFuzzer executables (fuzz_*.cpp) and by
// test_fuzz_corpus, which replays every corpus file through them with the normal compiler.
// Each parses one input through a parser's in-memory entry point and returns whether it
// parsed (true) or was refused with a DataError (false); any other exception escapes, and a
// parsed result that breaks its own invariants traps. Both are findings.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "data/dataset.h"
#include "model/cnn_spec.h"
#include "records/checkpoint.h"
#include "records/run_record.h"
#include "util/error.h"

namespace mb::fuzz {

// Input: a 2-byte little-endian length n, then n bytes of the images file, then the labels
// file (each raw or gzip). A short input leaves the later parts empty.
inline bool idx(std::string_view input) {
  std::string_view images, labels;
  if (input.size() >= 2) {
    const std::size_t n = std::size_t(uint8_t(input[0])) | (std::size_t(uint8_t(input[1])) << 8);
    const std::string_view rest = input.substr(2);
    images = rest.substr(0, n);
    labels = rest.substr(images.size());
  }
  try {
    const Dataset d = parse_idx_pair(images, labels, "fuzz");
    if (d.count < 1 || d.count > kMaxIdxImages || d.rows != 28 || d.cols != 28 ||
        d.pixels.size() != std::size_t(d.count) * 784 || d.labels.size() != std::size_t(d.count))
      __builtin_trap();
    for (uint8_t l : d.labels)
      if (l >= 10) __builtin_trap();
    return true;
  } catch (const DataError&) {
    return false;
  }
}

// Input: one mode byte, then a safetensors file. With an odd mode byte the file is followed
// by zero bytes for every tensor of the model (487,720), so that short inputs with a valid
// header reach the tensor checks and the accepting path; with an even one it is taken as is
// (the truncation checks).
inline bool checkpoint(std::string_view input) {
  if (input.empty()) return false;
  std::string file(input.substr(1));
  if (uint8_t(input[0]) & 1) file.append(cnn::kReferenceParams * sizeof(float), '\0');
  try {
    if (load_checkpoint_bytes(file, "fuzz").params.size() != cnn::kReferenceParams) __builtin_trap();
    return true;
  } catch (const DataError&) {
    return false;
  }
}

// Input: a run record's JSON text. A record that parsed must survive writing and reading
// back (the history rewrites records when a run is renamed).
inline bool run_record(std::string_view input) {
  try {
    const RunRecord r = parse_run_record(input);
    const std::string text = to_json(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    const RunRecord back = parse_run_record(text);
    if (back.id.empty() || back.status != r.status || back.epochs.size() != r.epochs.size() ||
        back.config.seed != r.config.seed || back.config.gpu_models.size() != r.config.gpu_models.size())
      __builtin_trap();
    return true;
  } catch (const DataError&) {
    return false;
  }
}

}  // namespace mb::fuzz
