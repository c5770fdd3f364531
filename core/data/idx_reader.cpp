// Reader for IDX files (the MNIST family's format), raw or gzip-compressed, that validates
// every header field before it allocates, so a corrupt or hostile file costs an error, not memory.
//
// Policy: the file must hold exactly the bytes its header declares. Trailing bytes are
// rejected ("trailing data"): they mean a mismatched or concatenated file, and reading one
// byte past the end of a .gz stream also makes zlib verify its CRC trailer.
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <system_error>

#include "data/dataset.h"
#include "util/error.h"

namespace mb {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;   // unsigned byte, 3 dims: count, rows, cols
constexpr uint32_t kLabelsMagic = 0x00000801;   // unsigned byte, 1 dim: count
constexpr uint8_t kUnsignedByte = 0x08;
constexpr int64_t kMaxCount = 10'000'000;        // far above any MNIST-family set; caps allocations
constexpr unsigned kChunk = 1u << 22;            // 4 MiB per gzread
// The model's input and output sizes (model/cnn_spec.h); repeated here because the data
// layer sits below the model layer and must not depend on it.
constexpr int64_t kImageSide = 28;
constexpr int kClasses = 10;

const char* dtype_name(uint8_t code) {
  switch (code) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "short";
    case 0x0C: return "int";
    case 0x0D: return "float";
    case 0x0E: return "double";
    default: return "unknown";
  }
}

// One open IDX file. gzopen reads plain files transparently, so raw and .gz share this path;
// for raw files the size is known and checked before the data buffer is allocated.
class IdxFile {
 public:
  explicit IdxFile(std::filesystem::path path) : path_(std::move(path)) {
    std::error_code ec;
    auto st = std::filesystem::status(path_, ec);
    if (!std::filesystem::exists(st)) throw DataError(fmt::format("IDX file '{}' is missing", name()));
    if (!std::filesystem::is_regular_file(st))
      throw DataError(fmt::format("IDX file '{}' is unreadable: not a regular file", name()));
    errno = 0;
    file_ = gzopen(path_.c_str(), "rb");
    if (file_ == nullptr)
      throw DataError(fmt::format("IDX file '{}' is unreadable: {}", name(),
                                  errno != 0 ? std::strerror(errno) : "cannot open"));
    gzbuffer(file_, 1u << 17);
  }
  ~IdxFile() {
    if (file_ != nullptr) gzclose_r(file_);
  }
  IdxFile(const IdxFile&) = delete;
  IdxFile& operator=(const IdxFile&) = delete;

  std::string name() const { return path_.string(); }

  // Reads the magic and dimension sizes; checks magic, dtype and rank against `expected_magic`.
  std::vector<int64_t> read_header(uint32_t expected_magic, const char* kind) {
    std::array<unsigned char, 4> magic{};
    if (read_some(magic.data(), 4) != 4)
      throw DataError(fmt::format("IDX file '{}' is truncated: too short for the 4-byte magic", name()));
    const uint32_t value = be32(magic.data());
    const int rank = expected_magic & 0xFF;
    if (magic[0] != 0 || magic[1] != 0)
      throw DataError(fmt::format("IDX file '{}' has bad magic 0x{:08X}, expected 0x{:08X} ({} file)",
                                  name(), value, expected_magic, kind));
    if (magic[2] != kUnsignedByte)
      throw DataError(fmt::format("IDX file '{}' has dtype 0x{:02X} ({}), expected 0x08 (unsigned byte)",
                                  name(), magic[2], dtype_name(magic[2])));
    if (magic[3] != rank)
      throw DataError(fmt::format("IDX file '{}' has bad magic 0x{:08X} ({}-dimensional), expected 0x{:08X} "
                                  "({} file)",
                                  name(), value, magic[3], expected_magic, kind));
    std::vector<int64_t> dims(static_cast<std::size_t>(rank));
    for (auto& d : dims) {
      std::array<unsigned char, 4> b{};
      if (read_some(b.data(), 4) != 4)
        throw DataError(fmt::format("IDX file '{}' is truncated inside its header", name()));
      d = be32(b.data());
    }
    header_bytes_ = 4 + 4 * static_cast<int64_t>(rank);
    return dims;
  }

  // Reads exactly `bytes` of data (already validated as sane) and insists on end of file.
  std::vector<uint8_t> read_data(int64_t bytes, const char* what) {
    std::vector<uint8_t> out;
    // gzdirect is reliable only after the first read, which read_header has done.
    if (gzdirect(file_)) {
      std::error_code ec;
      const auto size = static_cast<int64_t>(std::filesystem::file_size(path_, ec));
      if (!ec) {
        // Known size: reject before allocating anything.
        if (size < header_bytes_ + bytes)
          throw DataError(fmt::format("IDX file '{}' is truncated: its header declares {} bytes of {} "
                                      "but the file holds only {}",
                                      name(), bytes, what, std::max<int64_t>(0, size - header_bytes_)));
        if (size > header_bytes_ + bytes)
          throw DataError(fmt::format("IDX file '{}' has {} bytes of trailing data after the {} bytes of "
                                      "{} its header declares",
                                      name(), size - header_bytes_ - bytes, bytes, what));
        out.reserve(static_cast<std::size_t>(bytes));
      }
    }
    // Compressed: the real size is unknown until inflated, so the buffer grows with the data
    // actually read (never beyond the declared size) instead of trusting the header.
    while (static_cast<int64_t>(out.size()) < bytes) {
      const auto want = static_cast<std::size_t>(std::min<int64_t>(kChunk, bytes - int64_t(out.size())));
      if (out.capacity() < out.size() + want)
        out.reserve(static_cast<std::size_t>(
            std::min<int64_t>(bytes, std::max<int64_t>(int64_t(out.capacity()) * 2, int64_t(out.size() + want)))));
      const std::size_t at = out.size();
      out.resize(at + want);
      const std::size_t got = read_some(out.data() + at, want);
      out.resize(at + got);
      if (got < want)
        throw DataError(fmt::format("IDX file '{}' is truncated: its header declares {} bytes of {} "
                                    "but the file holds only {}",
                                    name(), bytes, what, out.size()));
    }
    unsigned char extra = 0;
    if (read_some(&extra, 1) != 0)
      throw DataError(fmt::format("IDX file '{}' has trailing data after the {} bytes of {} its header "
                                  "declares",
                                  name(), bytes, what));
    return out;
  }

 private:
  static uint32_t be32(const unsigned char* b) {
    return (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | uint32_t(b[3]);
  }

  // Short count only at end of data; a zlib error (corrupt or cut stream) throws.
  std::size_t read_some(void* dst, std::size_t n) {
    std::size_t total = 0;
    auto* p = static_cast<unsigned char*>(dst);
    while (total < n) {
      const int got = gzread(file_, p + total, static_cast<unsigned>(std::min<std::size_t>(n - total, kChunk)));
      if (got < 0) {
        int errnum = 0;
        const char* msg = gzerror(file_, &errnum);
        throw DataError(fmt::format("IDX file '{}' is truncated or corrupt: {}", name(),
                                    errnum == Z_ERRNO ? std::strerror(errno) : msg));
      }
      if (got == 0) {
        // zlib reports a stream cut mid-way as a clean end plus an error state.
        int errnum = 0;
        const char* msg = gzerror(file_, &errnum);
        if (errnum != Z_OK)
          throw DataError(fmt::format("IDX file '{}' is truncated or corrupt: {}", name(), msg));
        break;
      }
      total += static_cast<std::size_t>(got);
    }
    return total;
  }

  std::filesystem::path path_;
  gzFile file_ = nullptr;
  int64_t header_bytes_ = 0;
};

void check_count(const IdxFile& f, int64_t count, const char* kind) {
  MB_CHECK(count > 0 && count <= kMaxCount, DataError,
           "IDX file '{}' declares an absurd {} count {} (must be 1..{})", f.name(), kind, count, kMaxCount);
}

}  // namespace

Dataset load_idx_pair(const std::filesystem::path& images, const std::filesystem::path& labels,
                      std::string name) {
  // Both headers first: a mismatch or absurd size is reported before any data is read.
  IdxFile img(images);
  const auto idims = img.read_header(kImagesMagic, "images");
  check_count(img, idims[0], "image");
  if (idims[1] != kImageSide || idims[2] != kImageSide)
    throw DataError(fmt::format("IDX file '{}' holds {}x{} images; this model needs {}x{} (rows x cols)",
                                img.name(), idims[1], idims[2], kImageSide, kImageSide));

  IdxFile lab(labels);
  const auto ldims = lab.read_header(kLabelsMagic, "labels");
  check_count(lab, ldims[0], "label");
  if (ldims[0] != idims[0])
    throw DataError(fmt::format("count mismatch: images file '{}' holds {} images but labels file '{}' "
                                "holds {} labels",
                                img.name(), idims[0], lab.name(), ldims[0]));

  Dataset data;
  data.name = std::move(name);
  data.count = idims[0];
  data.rows = static_cast<int>(idims[1]);
  data.cols = static_cast<int>(idims[2]);
  data.pixels = img.read_data(data.count * data.pixels_per_image(), "images");
  data.labels = lab.read_data(data.count, "labels");
  for (int64_t i = 0; i < data.count; ++i) {
    if (data.labels[static_cast<std::size_t>(i)] >= kClasses)
      throw DataError(fmt::format("IDX file '{}' has label {} at index {}; labels must be < {}",
                                  lab.name(), data.labels[static_cast<std::size_t>(i)], i, kClasses));
  }
  return data;
}

}  // namespace mb
