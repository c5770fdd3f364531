// Image-classification data in the MNIST family's IDX layout, held as raw uint8 so every
// device (CPU replica, GPU) can keep the whole set resident and normalise on the fly.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "model/layer.h"

namespace mb {

struct Dataset {
  std::string name;                 // e.g. "fashion-mnist/train"
  int64_t count = 0;                // number of images
  int rows = 0, cols = 0;           // 28 x 28 for the MNIST family
  int channels = 1;                 // colour images: 3, stored planar (C, H, W), as the models read them
  int classes = 10;                 // every label is below it
  std::vector<uint8_t> pixels;      // count * channels * rows * cols, 0..255
  std::vector<uint8_t> labels;      // count, each < classes

  ImageShape shape() const { return {rows, cols, channels}; }
  int64_t pixels_per_image() const { return int64_t(rows) * cols * channels; }
  const uint8_t* image(int64_t i) const { return pixels.data() + i * pixels_per_image(); }
};

struct DataSplit {
  std::string name;                 // folder name, e.g. "fashion-mnist"
  std::filesystem::path dir;
  Dataset train;                    // train-images-idx3-ubyte[.gz] + train-labels-idx1-ubyte[.gz]
  Dataset val;                      // t10k-images-idx3-ubyte[.gz] + t10k-labels-idx1-ubyte[.gz]
};

// The most images (and labels) one IDX pair may declare: 2^31-1 bytes of 28x28 pixels. The
// engines address samples with 32-bit indices and every device keeps the whole set resident
// (each GPU its own copy), so a larger set could not be trained on anyway; the cap also keeps
// a hostile header from sizing an allocation. 2,739,137 images: 45x Fashion-MNIST's training set.
constexpr int64_t kMaxIdxImages = ((int64_t(1) << 31) - 1) / (28 * 28);

// Debian's dataset-fashion-mnist location.
std::filesystem::path default_data_dir();

// Reads one IDX images file and its labels file (raw or .gz). Throws DataError naming the
// file and the problem: missing, truncated, bad magic, absurd sizes, count mismatch, label >= 10,
// out of memory. Checks both headers and sizes before reading data, and the labels before the images.
Dataset load_idx_pair(const std::filesystem::path& images, const std::filesystem::path& labels,
                      std::string name);

// The same reader on bytes held in memory (each raw or gzip, told apart by the gzip magic), for
// the fuzz targets and for callers that have the files already; the names stand for the files
// in messages.
Dataset parse_idx_pair(std::string_view images, std::string_view labels, std::string name,
                       const std::string& images_name = "images", const std::string& labels_name = "labels");

// Reads the four files of the MNIST layout from `dir` (each raw or .gz; raw preferred).
DataSplit load_idx_dir(const std::filesystem::path& dir);

}  // namespace mb
