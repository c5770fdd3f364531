// Zip archives made by the tests themselves (libzip's writer): well-formed .keras files, and the
// hostile ones the reader must refuse (a zip bomb, an entry that lies about its size).
#pragma once
#include <zip.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace mb::test {

// A zip source of `size` zero bytes, produced as libzip reads it: a bomb costs no memory to make.
struct ZeroSource {
  zip_uint64_t size = 0, offset = 0;
  static zip_int64_t callback(void* state, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
    auto* s = static_cast<ZeroSource*>(state);
    switch (cmd) {
      case ZIP_SOURCE_OPEN: s->offset = 0; return 0;
      case ZIP_SOURCE_READ: {
        const zip_uint64_t n = std::min(len, s->size - s->offset);
        std::memset(data, 0, n);
        s->offset += n;
        return zip_int64_t(n);
      }
      case ZIP_SOURCE_CLOSE: return 0;
      case ZIP_SOURCE_STAT: {
        auto* st = static_cast<zip_stat_t*>(data);
        zip_stat_init(st);
        st->size = s->size;
        st->valid |= ZIP_STAT_SIZE;
        return sizeof(zip_stat_t);
      }
      case ZIP_SOURCE_ERROR: return 2 * sizeof(int);
      case ZIP_SOURCE_FREE: delete s; return 0;
      case ZIP_SOURCE_SUPPORTS:
        return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_STAT,
                                              ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, -1);
      default: return -1;
    }
  }
};

// Writes a zip at `path`: named entries of text (deflated), and optionally one entry of
// `zeros` zero bytes (deflated: about 1000:1).
inline void write_zip(const std::filesystem::path& path, const std::vector<std::pair<std::string, std::string>>& texts,
                      const std::string& zero_entry = {}, zip_uint64_t zeros = 0) {
  std::filesystem::remove(path);
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_EXCL, &err);
  if (!z) throw std::runtime_error("test zip: cannot create " + path.string());
  for (const auto& [name, text] : texts) {
    char* copy = static_cast<char*>(std::malloc(text.size() + 1));
    std::memcpy(copy, text.data(), text.size());
    zip_source_t* src = zip_source_buffer(z, copy, text.size(), 1);
    const zip_int64_t i = zip_file_add(z, name.c_str(), src, ZIP_FL_ENC_UTF_8);
    zip_set_file_compression(z, zip_uint64_t(i), ZIP_CM_DEFLATE, 9);
  }
  if (!zero_entry.empty()) {
    zip_source_t* src = zip_source_function(z, &ZeroSource::callback, new ZeroSource{zeros, 0});
    const zip_int64_t i = zip_file_add(z, zero_entry.c_str(), src, ZIP_FL_ENC_UTF_8);
    zip_set_file_compression(z, zip_uint64_t(i), ZIP_CM_DEFLATE, 9);
  }
  if (zip_close(z) != 0) throw std::runtime_error("test zip: cannot write " + path.string());
}

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace mb::test
