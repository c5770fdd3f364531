// Whole files into memory, bounded (see read_file.h).
#include "util/read_file.h"

#include <fstream>
#include <system_error>

#include "util/error.h"

namespace mb {

std::string read_file_bounded(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  MB_CHECK(!ec, DataError, "'{}' cannot be read: {}", path.string(), ec.message());
  MB_CHECK(size <= max_bytes, DataError, "'{}' is {} bytes: more than {} may hold here ({} bytes)", path.string(),
           size, what, max_bytes);
  std::ifstream in(path, std::ios::binary);
  MB_CHECK(bool(in), DataError, "'{}' cannot be opened", path.string());
  std::string bytes(std::size_t(size), '\0');
  in.read(bytes.data(), std::streamsize(size));
  MB_CHECK(in.gcount() == std::streamsize(size), DataError, "'{}' could not be read whole", path.string());
  return bytes;
}

}  // namespace mb
