// A whole file into memory, refused before any allocation when it is larger than the caller's
// bound (a data file, a model, an image: each reader knows what it can hold). Throws DataError
// naming the file: missing, unreadable, over the bound, or shorter than its size said.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace mb {

// `what` names the bound in the message ("one array", "an image file"...).
std::string read_file_bounded(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what);

}  // namespace mb
