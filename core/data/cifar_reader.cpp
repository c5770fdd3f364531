// CIFAR-10 binary batches (see cifar_reader.h).
#include "data/cifar_reader.h"

#include <system_error>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "util/error.h"
#include "util/read_file.h"

namespace mb {
namespace {

constexpr int kSide = 32, kChannels = 3, kClasses = 10;
// The whole set is 50,000 + 10,000 records; a folder of more batches is refused before it
// fills memory (the engines keep every image resident): as many bytes as IDX and NumPy allow.
constexpr int64_t kMaxRecords = ((int64_t(1) << 31) - 1) / kCifarRecordBytes;

Dataset empty_set(std::string name) {
  Dataset d;
  d.name = std::move(name);
  d.rows = d.cols = kSide;
  d.channels = kChannels;
  d.classes = kClasses;
  return d;
}

void append_file(const std::filesystem::path& file, Dataset& into) {
  const uint64_t room = uint64_t(kMaxRecords - into.count) * kCifarRecordBytes;
  append_cifar_batch(read_file_bounded(file, room, fmt::format("the {} images still allowed", kMaxRecords - into.count)),
                     file.string(), into);
}

}  // namespace

void append_cifar_batch(std::string_view bytes, const std::string& name, Dataset& into) {
  MB_CHECK(!bytes.empty() && bytes.size() % kCifarRecordBytes == 0, DataError,
           "{}: {} bytes is not a whole number of CIFAR-10 records ({} bytes each: a label byte and 32x32x3 "
           "pixels){}",
           name, bytes.size(), kCifarRecordBytes,
           bytes.size() % (kCifarRecordBytes + 1) == 0 ? " — CIFAR-100's records have two label bytes and are not read"
                                                        : "");
  const int64_t n = int64_t(bytes.size()) / kCifarRecordBytes;
  MB_CHECK(into.count + n <= kMaxRecords, DataError, "{}: more than {} images in all", name, kMaxRecords);
  const int64_t per = kCifarRecordBytes - 1;
  into.pixels.reserve(std::size_t((into.count + n) * per));
  for (int64_t i = 0; i < n; ++i) {
    const std::string_view record = bytes.substr(std::size_t(i * kCifarRecordBytes), kCifarRecordBytes);
    const int label = uint8_t(record[0]);
    MB_CHECK(label < kClasses, DataError, "{}: record {} has label {} (CIFAR-10's are 0..9)", name, i, label);
    into.labels.push_back(uint8_t(label));
    into.pixels.insert(into.pixels.end(), record.begin() + 1, record.end());
  }
  into.count += n;
}

bool is_cifar_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::exists(dir / "data_batch_1.bin", ec) || std::filesystem::exists(dir / "test_batch.bin", ec);
}

DataSplit load_cifar_dir(const std::filesystem::path& dir) {
  DataSplit split;
  split.dir = dir;
  split.name = "cifar-10";
  split.train = empty_set("cifar-10/train");
  split.val = empty_set("cifar-10/test");
  std::error_code ec;
  int batches = 0;
  for (int b = 1; std::filesystem::exists(dir / fmt::format("data_batch_{}.bin", b), ec); ++b, ++batches)
    append_file(dir / fmt::format("data_batch_{}.bin", b), split.train);
  MB_CHECK(batches > 0, DataError, "'{}' is missing (CIFAR-10's training batches are data_batch_1.bin onwards)",
           (dir / "data_batch_1.bin").string());
  const auto test = dir / "test_batch.bin";
  MB_CHECK(std::filesystem::exists(test, ec), DataError, "'{}' is missing (CIFAR-10's validation images)",
           test.string());
  append_file(test, split.val);
  spdlog::info("loaded cifar-10 from '{}': {} training images in {} batches and {} validation images of 32x32x3",
               dir.string(), split.train.count, batches, split.val.count);
  return split;
}

}  // namespace mb
