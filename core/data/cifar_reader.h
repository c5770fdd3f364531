// CIFAR-10 in its binary version (cifar-10-batches-bin: data_batch_1.bin ... data_batch_5.bin and
// test_batch.bin): records of one label byte (0..9) and 3,072 image bytes, 32 x 32 per colour
// plane (red, green, blue), which is the planar layout the models read. Refusals are
// DataErrors naming the file: a size that is not a whole number of records, a label of 10 or
// more, a missing test batch.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>

#include "data/dataset.h"

namespace mb {

constexpr int64_t kCifarRecordBytes = 1 + 3 * 32 * 32;

// One batch file's records appended to `into` (32 x 32 x 3, 10 classes); `name` stands for
// the file in messages.
void append_cifar_batch(std::string_view bytes, const std::string& name, Dataset& into);

// Whether `dir` holds CIFAR-10 binary batches (data_batch_1.bin or test_batch.bin).
bool is_cifar_dir(const std::filesystem::path& dir);
// The training batches (data_batch_1.bin onwards, in order, as many as there are) and
// test_batch.bin as the validation set.
DataSplit load_cifar_dir(const std::filesystem::path& dir);

}  // namespace mb
