// Telling --data's formats apart (see data_source.h).
#include "data/data_source.h"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "data/cifar_reader.h"
#include "data/image_folder.h"
#include "data/numpy_reader.h"
#include "data/synthetic.h"

namespace mb {

DataFormat data_format(const std::string& source) {
  if (parse_synthetic_source(source)) return DataFormat::Synthetic;
  if (source.empty()) return DataFormat::Idx;
  const std::filesystem::path path(source);
  std::error_code ec;
  if (path.extension() == ".npz" && !std::filesystem::is_directory(path, ec)) return DataFormat::Npz;
  if (std::filesystem::is_directory(path, ec)) {
    if (is_npy_dir(path)) return DataFormat::NpyDir;
    if (is_cifar_dir(path)) return DataFormat::Cifar;
    // IDX files win over sub-folders of images beside them (a folder of samples, say).
    const bool idx = std::filesystem::exists(path / "train-images-idx3-ubyte", ec) ||
                     std::filesystem::exists(path / "train-images-idx3-ubyte.gz", ec);
    if (!idx && is_image_folder(path)) return DataFormat::ImageFolder;
  }
  return DataFormat::Idx;   // its reader names the missing files (or the missing folder)
}

std::string data_summary(const DataSplit& data, DataFormat format) {
  const Dataset& t = data.train;
  return fmt::format("{} ({}): {} + {} images of {}x{}x{}, {} classes", data.name, format_name(format), t.count,
                     data.val.count, t.rows, t.cols, t.channels, t.classes);
}

std::string_view format_name(DataFormat format) {
  switch (format) {
    case DataFormat::Synthetic: return "synthetic";
    case DataFormat::Npz: return "NumPy .npz";
    case DataFormat::NpyDir: return "NumPy .npy files";
    case DataFormat::Cifar: return "CIFAR-10 binary batches";
    case DataFormat::ImageFolder: return "PNG/JPEG image folders";
    case DataFormat::Idx: break;
  }
  return "MNIST IDX files";
}

DataSplit load_data_source(const std::string& source) {
  switch (data_format(source)) {
    case DataFormat::Synthetic: return make_synthetic_split(*parse_synthetic_source(source));
    case DataFormat::Npz: return load_npz(source);
    case DataFormat::NpyDir: return load_npy_dir(source);
    case DataFormat::Cifar: return load_cifar_dir(source);
    case DataFormat::ImageFolder: return load_image_folder(source);
    case DataFormat::Idx: break;
  }
  return load_idx_dir(source.empty() ? default_data_dir() : std::filesystem::path(source));
}

std::string data_source_label(const std::string& source) {
  if (const auto spec = parse_synthetic_source(source)) return synthetic_source(*spec);
  return source.empty() ? default_data_dir().string() : source;
}

DataSourceInfo probe_data_source(const std::string& source) {
  const DataFormat format = data_format(source);
  switch (format) {
    case DataFormat::Synthetic: {
      const SyntheticSpec spec = *parse_synthetic_source(source);
      return {format, spec.shape, spec.classes};
    }
    case DataFormat::Npz: return {format, npz_image_shape(source), 0};
    case DataFormat::NpyDir: return {format, npy_dir_image_shape(source), 0};
    case DataFormat::Cifar: return {format, {32, 32, 3}, 10};
    case DataFormat::ImageFolder: {
      const ImageFolderSummary summary = summarise_image_folder(source);
      return {format, summary.shape, summary.classes};
    }
    case DataFormat::Idx: break;
  }
  return {format, {28, 28, 1}, 10};   // the only shape and class count its reader accepts
}

}  // namespace mb
