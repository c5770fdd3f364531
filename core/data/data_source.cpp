// Telling --data's formats apart (see data_source.h).
#include "data/data_source.h"

#include <filesystem>
#include <system_error>

#include "data/cifar_reader.h"
#include "data/numpy_reader.h"
#include "data/synthetic.h"

namespace mb {
namespace {

enum class Format { Synthetic, Npz, NpyDir, Cifar, Idx };

Format format_of(const std::string& source) {
  if (parse_synthetic_source(source)) return Format::Synthetic;
  if (source.empty()) return Format::Idx;
  const std::filesystem::path path(source);
  std::error_code ec;
  if (path.extension() == ".npz" && !std::filesystem::is_directory(path, ec)) return Format::Npz;
  if (std::filesystem::is_directory(path, ec)) {
    if (is_npy_dir(path)) return Format::NpyDir;
    if (is_cifar_dir(path)) return Format::Cifar;
  }
  return Format::Idx;   // its reader names the missing files (or the missing folder)
}

}  // namespace

DataSplit load_data_source(const std::string& source) {
  switch (format_of(source)) {
    case Format::Synthetic: return make_synthetic_split(*parse_synthetic_source(source));
    case Format::Npz: return load_npz(source);
    case Format::NpyDir: return load_npy_dir(source);
    case Format::Cifar: return load_cifar_dir(source);
    case Format::Idx: break;
  }
  return load_idx_dir(source.empty() ? default_data_dir() : std::filesystem::path(source));
}

std::string data_source_label(const std::string& source) {
  if (const auto spec = parse_synthetic_source(source)) return synthetic_source(*spec);
  return source.empty() ? default_data_dir().string() : source;
}

DataSourceInfo probe_data_source(const std::string& source) {
  switch (format_of(source)) {
    case Format::Synthetic: return {"synthetic", parse_synthetic_source(source)->shape};
    case Format::Npz: return {"NumPy .npz", npz_image_shape(source)};
    case Format::NpyDir: return {"NumPy .npy files", npy_dir_image_shape(source)};
    case Format::Cifar: return {"CIFAR-10 binary batches", {32, 32, 3}};
    case Format::Idx: break;
  }
  return {"MNIST IDX files", {28, 28, 1}};   // the only shape its reader accepts
}

}  // namespace mb
