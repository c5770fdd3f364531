// Image-classification data in the MNIST family's IDX layout, held as raw uint8 so every
// device (CPU replica, GPU) can keep the whole set resident and normalise on the fly.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace mb {

struct Dataset {
  std::string name;                 // e.g. "fashion-mnist/train"
  int64_t count = 0;                // number of images
  int rows = 0, cols = 0;           // 28 x 28 for the MNIST family
  std::vector<uint8_t> pixels;      // count * rows * cols, row-major, 0..255
  std::vector<uint8_t> labels;      // count, each < 10

  int64_t pixels_per_image() const { return int64_t(rows) * cols; }
  const uint8_t* image(int64_t i) const { return pixels.data() + i * pixels_per_image(); }
};

struct DataSplit {
  std::string name;                 // folder name, e.g. "fashion-mnist"
  std::filesystem::path dir;
  Dataset train;                    // train-images-idx3-ubyte[.gz] + train-labels-idx1-ubyte[.gz]
  Dataset val;                      // t10k-images-idx3-ubyte[.gz] + t10k-labels-idx1-ubyte[.gz]
};

// Debian's dataset-fashion-mnist location.
std::filesystem::path default_data_dir();

// Reads one IDX images file and its labels file (raw or .gz). Throws DataError naming the
// file and the problem: missing, truncated, bad magic, absurd sizes, count mismatch, label >= 10.
Dataset load_idx_pair(const std::filesystem::path& images, const std::filesystem::path& labels,
                      std::string name);

// Reads the four files of the MNIST layout from `dir` (each raw or .gz; raw preferred).
DataSplit load_idx_dir(const std::filesystem::path& dir);

}  // namespace mb
