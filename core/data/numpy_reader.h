// NumPy arrays as Keras hands data sets out: `keras.datasets` caches e.g. `mnist.npz` with the
// arrays x_train, y_train, x_test and y_test; a folder of the same four `.npy` files works too.
// Debian 12 packages no NumPy-file library for C++ (no cnpy, no xtensor), and the format is
// small and documented (numpy.lib.format, versions 1.0 to 3.0), so it is read here, strictly:
// the header is a Python dict literal of exactly 'descr', 'fortran_order' and 'shape', at most
// 10,000 bytes (NumPy's own default limit); the data must be exactly what the shape and dtype
// say. `.npz` archives go through the one zip reader (archive/zip_archive.h) with limits sized
// for data sets. Every refusal is a DataError naming the file (and the array) and the problem.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "data/dataset.h"

namespace mb {

// One array: its dtype ('u' unsigned or 'i' signed integer, 'f' float, 'b' bool; 1 to 8 bytes;
// byte order) and shape, and its bytes in C order.
struct NpyArray {
  char kind = 'u';
  int item_bytes = 1;
  bool big_endian = false;
  std::vector<int64_t> shape;
  std::string bytes;             // the whole file
  std::size_t data_offset = 0;   // where the elements start in `bytes`

  int64_t size() const;                   // elements
  std::string dtype() const;              // "uint8", "int64", "float32", ...
  // Element i of an integer or bool array, as an integer (any width, either byte order).
  int64_t integer_at(int64_t i) const;
};

// The most bytes one array's data may hold: as the IDX reader's cap, 2^31 - 1 (the engines keep
// every image resident and address samples with 32-bit indices).
constexpr int64_t kMaxNpyDataBytes = (int64_t(1) << 31) - 1;

// Parses a `.npy` file held in memory; `name` stands for it in messages.
NpyArray parse_npy(std::string bytes, const std::string& name);
// Its header alone, from the file's first bytes (at least the header's): dtype and shape, with
// `bytes` left empty (the data summary, before reading the images).
NpyArray parse_npy_header(std::string_view prefix, const std::string& name);

// Images and labels as a Dataset. Images: N x H x W (one channel) or N x H x W x C, of an
// integer type with values 0..255 (uint8 as Keras stores them; they are scaled by 1/255 in the
// engines, as IDX images are); float images are refused with what to do, since this version
// keeps every image as bytes. Labels: N or N x 1, of any integer type, 0..255. Colour images
// are stored planar (C, H, W), as the models read them. `classes` is the largest label + 1
// (load_numpy_* make it the same for both splits).
Dataset dataset_from_arrays(const NpyArray& images, const NpyArray& labels, std::string name,
                            const std::string& images_name, const std::string& labels_name);

// A `.npz` archive (np.savez or np.savez_compressed) with x_train, y_train, x_test, y_test.
DataSplit load_npz(const std::filesystem::path& file);
// The same archive held in memory (the fuzz target); `name` stands for the file.
DataSplit parse_npz(std::string bytes, const std::string& name);
// A folder holding x_train.npy, y_train.npy, x_test.npy and y_test.npy.
DataSplit load_npy_dir(const std::filesystem::path& dir);
// The training images' shape from x_train's header alone (the data summary before loading).
ImageShape npz_image_shape(const std::filesystem::path& file);
ImageShape npy_dir_image_shape(const std::filesystem::path& dir);
// Whether `dir` has the four files load_npy_dir reads (or any of them: it then names the missing).
bool is_npy_dir(const std::filesystem::path& dir);

}  // namespace mb
