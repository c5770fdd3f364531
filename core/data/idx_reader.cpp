// Reader for IDX files (the MNIST family's format), raw or gzip-compressed, from a file or from
// memory, that validates every header field before it allocates, so a corrupt or hostile file
// costs an error, not memory.
//
// Policy: the file must hold exactly the bytes its header declares. Trailing bytes are
// rejected ("trailing data"), also after a gzip stream: they mean a mismatched or concatenated
// file. Everything cheap is checked before anything is inflated: both headers, the caps below,
// the raw files' sizes, and for gzip files the most their size can inflate to; then the labels
// (small) are read and checked, and only then the images.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <system_error>

#include "data/dataset.h"
#include "util/error.h"

namespace mb {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;   // unsigned byte, 3 dims: count, rows, cols
constexpr uint32_t kLabelsMagic = 0x00000801;   // unsigned byte, 1 dim: count
constexpr uint8_t kUnsignedByte = 0x08;
// The MNIST family's images and classes, the IDX sets this reader takes; a model of another
// shape is refused against the data by data/data_fit.h, naming both.
constexpr int64_t kImageSide = 28;
constexpr int kClasses = 10;
constexpr int64_t kImageBytes = kImageSide * kImageSide;
// Deflate emits at least 2 bits per 258-byte match, so no gzip file inflates to more than
// 1032 times its size (zlib's documented limit; gzip -9 of zeros reaches ~1030).
constexpr int64_t kMaxDeflateRatio = 1032;
constexpr std::size_t kFileChunk = 1u << 18;     // raw bytes per read(2)
constexpr std::size_t kDataChunk = 1u << 22;     // the data buffer grows 4 MiB at a time

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

// Where the raw (possibly compressed) bytes of one IDX file come from.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // The next stretch of raw bytes, empty at the end; valid until the next call.
  virtual std::span<const unsigned char> next() = 0;
  virtual int64_t size() const = 0;
};

class FileSource final : public ByteSource {
 public:
  explicit FileSource(const std::filesystem::path& path) : name_(path.string()) {
    std::error_code ec;
    const auto st = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(st)) throw DataError(fmt::format("IDX file '{}' is missing", name_));
    if (!std::filesystem::is_regular_file(st))
      throw DataError(fmt::format("IDX file '{}' is unreadable: not a regular file", name_));
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw DataError(fmt::format("IDX file '{}' is unreadable: {}", name_, std::strerror(errno)));
    struct stat s {};
    if (::fstat(fd_, &s) != 0)
      throw DataError(fmt::format("IDX file '{}' is unreadable: {}", name_, std::strerror(errno)));
    size_ = static_cast<int64_t>(s.st_size);
    buffer_.reset(new unsigned char[kFileChunk]);
  }
  ~FileSource() override {
    if (fd_ >= 0) ::close(fd_);
  }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  // Fills the whole buffer unless the file ends, so the first chunk holds the gzip magic.
  std::span<const unsigned char> next() override {
    std::size_t got = 0;
    while (got < kFileChunk) {
      const ssize_t n = ::read(fd_, buffer_.get() + got, kFileChunk - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw DataError(fmt::format("IDX file '{}' is unreadable: {}", name_, std::strerror(errno)));
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    return {buffer_.get(), got};
  }
  int64_t size() const override { return size_; }

 private:
  std::string name_;
  int fd_ = -1;
  int64_t size_ = 0;
  std::unique_ptr<unsigned char[]> buffer_;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  std::span<const unsigned char> next() override {
    // zlib counts input in unsigned int: hand out at most 1 GiB at a time.
    const std::size_t n = std::min<std::size_t>(bytes_.size() - at_, std::size_t(1) << 30);
    std::span<const unsigned char> out(reinterpret_cast<const unsigned char*>(bytes_.data()) + at_, n);
    at_ += n;
    return out;
  }
  int64_t size() const override { return static_cast<int64_t>(bytes_.size()); }

 private:
  std::string_view bytes_;
  std::size_t at_ = 0;
};

// One IDX file's content: the raw bytes, or the inflated gzip stream (concatenated members
// included, as gzip itself allows), told apart by the gzip magic 1F 8B; an IDX file starts
// with 00 00, so the two can never be confused.
class IdxStream {
 public:
  IdxStream(std::unique_ptr<ByteSource> source, std::string name) : source_(std::move(source)), name_(std::move(name)) {
    in_ = source_->next();
    gzip_ = in_.size() >= 2 && in_[0] == 0x1F && in_[1] == 0x8B;
    if (gzip_) {
      // 16 + MAX_WBITS: a gzip wrapper only, whose CRC-32 and length trailer inflate checks.
      if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) throw std::bad_alloc();
      z_active_ = true;
      z_.next_in = const_cast<unsigned char*>(in_.data());
      z_.avail_in = static_cast<uInt>(in_.size());
    }
  }
  ~IdxStream() {
    if (z_active_) inflateEnd(&z_);
  }
  IdxStream(const IdxStream&) = delete;
  IdxStream& operator=(const IdxStream&) = delete;

  const std::string& name() const { return name_; }
  bool gzip() const { return gzip_; }
  int64_t raw_size() const { return source_->size(); }

  // Up to n bytes of content; fewer only at its end. Corrupt or cut gzip data throws.
  std::size_t read(unsigned char* dst, std::size_t n) { return gzip_ ? inflate_some(dst, n) : copy_some(dst, n); }

  // Reads the magic and dimension sizes; checks magic, dtype and rank against `expected_magic`.
  std::vector<int64_t> read_header(uint32_t expected_magic, const char* kind) {
    std::array<unsigned char, 4> magic{};
    if (read(magic.data(), 4) != 4)
      throw DataError(fmt::format("IDX file '{}' is truncated: too short for the 4-byte magic", name_));
    const uint32_t value = be32(magic.data());
    const int rank = expected_magic & 0xFF;
    if (magic[0] != 0 || magic[1] != 0)
      throw DataError(fmt::format("IDX file '{}' has bad magic 0x{:08X}, expected 0x{:08X} ({} file)", name_, value,
                                  expected_magic, kind));
    if (magic[2] != kUnsignedByte)
      throw DataError(fmt::format("IDX file '{}' has dtype 0x{:02X} ({}), expected 0x08 (unsigned byte)", name_,
                                  magic[2], dtype_name(magic[2])));
    if (magic[3] != rank)
      throw DataError(fmt::format("IDX file '{}' has bad magic 0x{:08X} ({}-dimensional), expected 0x{:08X} "
                                  "({} file)",
                                  name_, value, magic[3], expected_magic, kind));
    std::vector<int64_t> dims(static_cast<std::size_t>(rank));
    for (auto& d : dims) {
      std::array<unsigned char, 4> b{};
      if (read(b.data(), 4) != 4) throw DataError(fmt::format("IDX file '{}' is truncated inside its header", name_));
      d = be32(b.data());
    }
    header_bytes_ = 4 + 4 * static_cast<int64_t>(rank);
    return dims;
  }

  // The checks that need no data: a raw file must have exactly header + `bytes` bytes; a gzip
  // file must be large enough to inflate to that much at deflate's best ratio.
  void check_size(int64_t bytes, const char* what) const {
    const int64_t size = raw_size(), want = header_bytes_ + bytes;
    if (!gzip_) {
      if (size < want)
        throw DataError(fmt::format("IDX file '{}' is truncated: its header declares {} bytes of {} but the file "
                                    "holds only {}",
                                    name_, bytes, what, std::max<int64_t>(0, size - header_bytes_)));
      if (size > want)
        throw DataError(fmt::format("IDX file '{}' has {} bytes of trailing data after the {} bytes of {} its "
                                    "header declares",
                                    name_, size - want, bytes, what));
    } else if (want / kMaxDeflateRatio > size) {
      throw DataError(fmt::format("IDX file '{}' is truncated: its header declares {} bytes of {}, but a gzip file "
                                  "of {} bytes inflates to at most {} (deflate's {}:1 limit)",
                                  name_, bytes, what, size, size * kMaxDeflateRatio, kMaxDeflateRatio));
    }
  }

  // Reads exactly `bytes` of data (already checked against the caps) and insists on the end.
  // The buffer is reserved from the header but filled as data actually arrives, so a short
  // stream touches no more memory than it holds.
  std::vector<uint8_t> read_data(int64_t bytes, const char* what) {
    std::vector<uint8_t> out;
    try {
      out.reserve(static_cast<std::size_t>(bytes));
      while (static_cast<int64_t>(out.size()) < bytes) {
        const std::size_t at = out.size();
        const auto want = static_cast<std::size_t>(std::min<int64_t>(int64_t(kDataChunk), bytes - int64_t(at)));
        out.resize(at + want);
        const std::size_t got = read(out.data() + at, want);
        out.resize(at + got);
        if (got < want)
          throw DataError(fmt::format("IDX file '{}' is truncated: its header declares {} bytes of {} but the file "
                                      "holds only {}",
                                      name_, bytes, what, out.size()));
      }
    } catch (const std::bad_alloc&) {
      throw DataError(fmt::format("IDX file '{}': out of memory for the {} bytes of {} its header declares", name_,
                                  bytes, what));
    }
    unsigned char extra = 0;
    if (read(&extra, 1) != 0)
      throw DataError(fmt::format("IDX file '{}' has trailing data after the {} bytes of {} its header declares",
                                  name_, bytes, what));
    return out;
  }

 private:
  static uint32_t be32(const unsigned char* b) {
    return (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | uint32_t(b[3]);
  }

  std::size_t copy_some(unsigned char* dst, std::size_t n) {
    std::size_t total = 0;
    while (total < n) {
      if (in_.empty()) {
        in_ = source_->next();
        if (in_.empty()) break;
      }
      const std::size_t k = std::min(n - total, in_.size());
      std::memcpy(dst + total, in_.data(), k);
      in_ = in_.subspan(k);
      total += k;
    }
    return total;
  }

  // Inflates at most n bytes: the output bound is what keeps a decompression bomb harmless.
  std::size_t inflate_some(unsigned char* dst, std::size_t n) {
    std::size_t total = 0;
    while (total < n) {
      if (member_done_) {
        // After a complete member: the end, another member, or trailing garbage.
        if (z_.avail_in == 0 && !refill()) break;
        if (z_.next_in[0] != 0x1F)
          throw DataError(fmt::format("IDX file '{}' has trailing data after its gzip stream", name_));
        if (inflateReset(&z_) != Z_OK) throw DataError(fmt::format("IDX file '{}' is corrupt", name_));
        member_done_ = false;
      }
      if (z_.avail_in == 0 && !refill())
        throw DataError(fmt::format("IDX file '{}' is truncated: its gzip stream ends before its end marker", name_));
      const std::size_t want = std::min<std::size_t>(n - total, UINT_MAX);
      z_.next_out = dst + total;
      z_.avail_out = static_cast<uInt>(want);
      const int rc = inflate(&z_, Z_NO_FLUSH);
      total += want - z_.avail_out;
      switch (rc) {
        case Z_STREAM_END: member_done_ = true; break;
        case Z_OK: break;
        case Z_BUF_ERROR:
          // No progress was possible; with input and room left that can only be a zlib fault.
          if (z_.avail_in > 0 && z_.avail_out > 0)
            throw DataError(fmt::format("IDX file '{}' is corrupt: gzip stream stalled", name_));
          break;
        case Z_MEM_ERROR: throw std::bad_alloc();
        default:
          throw DataError(fmt::format("IDX file '{}' is corrupt: {}", name_,
                                      z_.msg != nullptr ? z_.msg : "invalid gzip data"));
      }
    }
    return total;
  }

  bool refill() {
    in_ = source_->next();
    z_.next_in = const_cast<unsigned char*>(in_.data());
    z_.avail_in = static_cast<uInt>(in_.size());
    return !in_.empty();
  }

  std::unique_ptr<ByteSource> source_;
  std::string name_;
  std::span<const unsigned char> in_;   // raw mode: the unread rest of the current chunk
  bool gzip_ = false;
  z_stream z_{};
  bool z_active_ = false;
  bool member_done_ = false;
  int64_t header_bytes_ = 0;
};

[[noreturn]] void over_limit(const IdxStream& f, int64_t count, const char* kind) {
  throw DataError(fmt::format(
      "IDX file '{}' declares {} {}s, over the limit of {} (the 28x28 images that fit in 2^31-1 bytes: the "
      "engines index samples with 32-bit integers and each device keeps the whole set resident)",
      f.name(), count, kind, kMaxIdxImages));
}

void check_count(const IdxStream& f, int64_t count, const char* kind) {
  MB_CHECK(count > 0, DataError, "IDX file '{}' declares {} {}s (must be at least 1)", f.name(), count, kind);
  if (count > kMaxIdxImages) over_limit(f, count, kind);
}

// `open_labels()` is called after the images header passed, so a missing labels file is
// reported only when the images file is fine.
template <typename OpenLabels>
Dataset parse_pair(IdxStream& img, OpenLabels open_labels, const std::string& labels_name, std::string name) {
  // Both headers first: a mismatch or absurd size is reported before any data is read.
  const auto idims = img.read_header(kImagesMagic, "images");
  check_count(img, idims[0], "image");
  if (idims[1] != kImageSide || idims[2] != kImageSide)
    throw DataError(fmt::format("IDX file '{}' holds {}x{} images; this model needs {}x{} (rows x cols)", img.name(),
                                idims[1], idims[2], kImageSide, kImageSide));

  IdxStream lab(open_labels(), labels_name);
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
  const int64_t pixel_bytes = data.count * kImageBytes;
  img.check_size(pixel_bytes, "images");
  lab.check_size(data.count, "labels");
  // The labels are small and their check is cheap: a bad labels file costs no inflating of images.
  data.labels = lab.read_data(data.count, "labels");
  for (int64_t i = 0; i < data.count; ++i) {
    if (data.labels[static_cast<std::size_t>(i)] >= kClasses)
      throw DataError(fmt::format("IDX file '{}' has label {} at index {}; labels must be < {}", lab.name(),
                                  data.labels[static_cast<std::size_t>(i)], i, kClasses));
  }
  data.pixels = img.read_data(pixel_bytes, "images");
  return data;
}

}  // namespace

Dataset load_idx_pair(const std::filesystem::path& images, const std::filesystem::path& labels, std::string name) {
  IdxStream img(std::make_unique<FileSource>(images), images.string());
  auto open = [&] { return std::make_unique<FileSource>(labels); };
  return parse_pair(img, open, labels.string(), std::move(name));
}

Dataset parse_idx_pair(std::string_view images, std::string_view labels, std::string name,
                       const std::string& images_name, const std::string& labels_name) {
  IdxStream img(std::make_unique<MemorySource>(images), images_name);
  auto open = [&] { return std::make_unique<MemorySource>(labels); };
  return parse_pair(img, open, labels_name, std::move(name));
}

}  // namespace mb
