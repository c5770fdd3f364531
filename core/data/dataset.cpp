// Locating the MNIST-layout data folder and loading its train/test pair; trimming a set.
#include <cstdlib>
#include <system_error>

#include <spdlog/spdlog.h>

#include "data/dataset.h"
#include "util/error.h"

namespace mb {
namespace {

// `stem` or `stem.gz` in `dir`; the raw name wins when both exist (no inflating needed).
std::filesystem::path find_idx(const std::filesystem::path& dir, const std::string& stem) {
  std::error_code ec;
  auto raw = dir / stem;
  if (std::filesystem::exists(raw, ec)) return raw;
  auto gz = dir / (stem + ".gz");
  if (std::filesystem::exists(gz, ec)) return gz;
  throw DataError(fmt::format("IDX file '{}' is missing (neither it nor '{}' exists)", raw.string(),
                              gz.string()));
}

// The folder's own name, also for "data/" or "." spellings.
std::string folder_name(const std::filesystem::path& dir) {
  std::error_code ec;
  auto abs = std::filesystem::weakly_canonical(dir, ec);
  if (ec) abs = std::filesystem::absolute(dir, ec).lexically_normal();
  auto name = abs.filename();
  if (name.empty()) name = abs.parent_path().filename();
  return name.empty() ? std::string("data") : name.string();
}

}  // namespace

std::filesystem::path default_data_dir() {
  if (const char* env = std::getenv("MIRRORBENCH_DATA"); env != nullptr && *env != '\0') return env;
  return "/usr/share/datasets/fashion-mnist";
}

DataSplit load_idx_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw DataError(fmt::format("data folder '{}' does not exist or is not a folder "
                                "(set MIRRORBENCH_DATA to the folder holding the IDX files)",
                                dir.string()));
  DataSplit split;
  split.dir = dir;
  split.name = folder_name(dir);
  // One statement per file: argument evaluation order is unspecified, and the first missing
  // file in the documented order is the one to report.
  const auto train_images = find_idx(dir, "train-images-idx3-ubyte");
  const auto train_labels = find_idx(dir, "train-labels-idx1-ubyte");
  const auto test_images = find_idx(dir, "t10k-images-idx3-ubyte");
  const auto test_labels = find_idx(dir, "t10k-labels-idx1-ubyte");
  split.train = load_idx_pair(train_images, train_labels, split.name + "/train");
  split.val = load_idx_pair(test_images, test_labels, split.name + "/test");
  spdlog::info("loaded {} from '{}': {} training and {} validation images of {}x{}", split.name, dir.string(),
               split.train.count, split.val.count, split.train.rows, split.train.cols);
  return split;
}

}  // namespace mb
