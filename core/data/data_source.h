// What --data names, read into a training and a validation set: the one place that tells the
// formats apart. In order: "synthetic:HxWxC[:CLASSES]" (data/synthetic.h); a `.npz` file
// (NumPy, as keras.datasets caches them: data/numpy_reader.h); a folder of x_train.npy ...; a
// folder of CIFAR-10 binary batches (data/cifar_reader.h); a folder of PNG/JPEG images in
// train/ and test/ class sub-folders (data/image_folder.h); a folder in the MNIST IDX layout
// (data/dataset.h). Empty: Debian's Fashion-MNIST (default_data_dir). Every reader throws a
// DataError naming the file and the problem.
#pragma once
#include <string>
#include <string_view>

#include "data/dataset.h"

namespace mb {

DataSplit load_data_source(const std::string& source);
// The folder, file or synthetic word a --data value stands for (empty -> the default folder).
std::string data_source_label(const std::string& source);
enum class DataFormat { Synthetic, Npz, NpyDir, Cifar, ImageFolder, Idx };
// "synthetic", "NumPy .npz", "NumPy .npy files", "CIFAR-10 binary batches", "PNG/JPEG image
// folders", "MNIST IDX files".
std::string_view format_name(DataFormat format);
// The format a --data value names, from its form and the folder's entries alone (nothing read).
DataFormat data_format(const std::string& source);
// One line for people: "fashion-mnist (MNIST IDX files): 60000 + 10000 images of 28x28x1, 10 classes".
std::string data_summary(const DataSplit& data, DataFormat format);

// What a source holds, from its headers alone (the window's data picker, before a run): the
// format, the training images' shape, and the class count where the format fixes it (IDX and
// CIFAR-10: 10; a synthetic source: its own; an image folder: its class sub-folders) or 0
// where only the labels tell (NumPy).
// DataError as the readers, for what the headers already show (a missing file, a bad header).
struct DataSourceInfo {
  DataFormat format = DataFormat::Idx;
  ImageShape shape;
  int classes = 0;
};
DataSourceInfo probe_data_source(const std::string& source);

}  // namespace mb
