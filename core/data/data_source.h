// What --data names, read into a training and a validation set: the one place that tells the
// formats apart. In order: "synthetic:HxWxC[:CLASSES]" (data/synthetic.h); a `.npz` file
// (NumPy, as keras.datasets caches them: data/numpy_reader.h); a folder of x_train.npy ...; a
// folder of CIFAR-10 binary batches (data/cifar_reader.h); a folder in the MNIST IDX layout
// (data/dataset.h). Empty: Debian's Fashion-MNIST (default_data_dir). Every reader throws a
// DataError naming the file and the problem.
#pragma once
#include <string>

#include "data/dataset.h"

namespace mb {

DataSplit load_data_source(const std::string& source);
// The folder, file or synthetic word a --data value stands for (empty -> the default folder).
std::string data_source_label(const std::string& source);
// What a source holds, from its headers alone (the window's data picker, before a run):
// the format in words ("NumPy .npz", "NumPy .npy files", "CIFAR-10 binary batches", "MNIST IDX
// files", "synthetic") and the training images' shape. DataError as the readers, for what the
// headers already show (a missing file, a malformed header).
struct DataSourceInfo {
  std::string format;
  ImageShape shape;
};
DataSourceInfo probe_data_source(const std::string& source);

}  // namespace mb
