// Zip archives read with libzip, within limits: the one zip reader for Keras 3 `.keras` model
// files and NumPy `.npz` arrays. A hostile archive (a zip bomb, an entry that lies about its
// size, a central directory of millions of entries) is refused in bounded time and memory with
// a DataError naming the file, the entry and the limit; nothing is ever written to disk, so
// entry names are only compared, never used as paths.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mb {

struct ZipLimits {
  int64_t max_entries = 10000;                  // entries in the central directory
  int64_t max_entry_bytes = int64_t(64) << 20;  // one entry, uncompressed, as read
  double max_ratio = 200;                       // uncompressed : compressed of one entry
};

class ZipArchive {
 public:
  // Opens a file; DataError when it is missing, not a zip, or has too many entries.
  explicit ZipArchive(const std::filesystem::path& path, ZipLimits limits = {});
  // Opens bytes held in memory (`name` is what messages call it).
  ZipArchive(std::string bytes, std::string name, ZipLimits limits = {});
  ~ZipArchive();
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;

  const std::string& name() const { return name_; }
  std::vector<std::string> entries() const;
  bool contains(std::string_view entry) const;
  // The entry's bytes. DataError when it is missing, encrypted, larger than the limit (declared
  // or found while inflating), compressed past the ratio, or corrupt.
  std::string read(std::string_view entry) const;
  // At most its first `max_bytes` (a file's header, without inflating the rest).
  std::string read_prefix(std::string_view entry, std::size_t max_bytes) const;

 private:
  struct Handle;
  void open_checked(void* source);
  std::string name_;
  ZipLimits limits_;
  std::string bytes_;   // the archive itself when opened from memory
  uint64_t archive_bytes_ = 0;   // its size: no entry's stored bytes can be more
  std::unique_ptr<Handle> zip_;
};

}  // namespace mb
