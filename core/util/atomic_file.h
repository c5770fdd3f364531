// Atomic file replacement: write a temporary file beside the target, fsync, rename.
// A crash or a full disk leaves the old file intact, never a half-written one.
#pragma once
#include <filesystem>
#include <string_view>

namespace mb {

void write_file_atomic(const std::filesystem::path& file, std::string_view bytes);  // throws Error

}  // namespace mb
