// NumPy .npy / .npz data sets (see numpy_reader.h).
#include "data/numpy_reader.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <system_error>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "archive/zip_archive.h"
#include "model/model_shape.h"
#include "util/error.h"
#include "util/read_file.h"

namespace mb {
namespace {

constexpr std::size_t kMaxHeaderBytes = 10000;   // NumPy's own max_header_size
constexpr int kMaxDims = 8;
// Images no model here could read are refused as data: the model's own limits (model_shape.h).
constexpr int64_t kMaxSide = kMaxImageSide;

// The header: a Python dict literal, e.g. {'descr': '|u1', 'fortran_order': False, 'shape': (60000, 28, 28), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  void parse(NpyArray& a) {
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = quoted();
      expect(':');
      skip_space();
      if (key == "descr") {
        MB_CHECK(peek() == '\'' || peek() == '"', DataError,
                 "{}: a structured dtype (a list of fields) is not an array of numbers", name_);
        descr(quoted(), a);
        have_descr = true;
      } else if (key == "fortran_order") {
        const bool fortran = boolean();
        MB_CHECK(!fortran, DataError, "{}: the array is stored in Fortran (column-major) order; save it with "
                                      "np.ascontiguousarray (C order)", name_);
        have_order = true;
      } else if (key == "shape") {
        a.shape = shape();
        have_shape = true;
      } else {
        fail(fmt::format("unknown header key '{}'", key));
      }
      skip_space();
      if (peek() == ',') {
        ++at_;
        continue;
      }
      skip_space();
      MB_CHECK(peek() == '}', DataError, "{}: the header's dict is malformed at byte {}", name_, at_);
    }
    expect('}');
    skip_space();
    MB_CHECK(at_ == s_.size(), DataError, "{}: text after the header's dict", name_);
    MB_CHECK(have_descr && have_order && have_shape, DataError,
             "{}: the header lacks '{}'", name_, !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw DataError(fmt::format("{}: {}", name_, what)); }
  char peek() const { return at_ < s_.size() ? s_[at_] : '\0'; }
  void skip_space() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n')) ++at_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) fail(fmt::format("the header's dict is malformed at byte {} (expected '{}')", at_, c));
    ++at_;
  }
  std::string quoted() {
    skip_space();
    const char q = peek();
    if (q != '\'' && q != '"') fail(fmt::format("the header's dict is malformed at byte {} (expected a string)", at_));
    const std::size_t end = s_.find(q, at_ + 1);
    if (end == std::string_view::npos) fail("the header has an unterminated string");
    std::string out(s_.substr(at_ + 1, end - at_ - 1));
    at_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.substr(at_, 4) == "True") return at_ += 4, true;
    if (s_.substr(at_, 5) == "False") return at_ += 5, false;
    fail("fortran_order is neither True nor False");
  }
  std::vector<int64_t> shape() {
    expect('(');
    std::vector<int64_t> dims;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      MB_CHECK(int(dims.size()) < kMaxDims, DataError, "{}: more than {} dimensions", name_, kMaxDims);
      int64_t v = 0;
      const std::size_t start = at_;
      while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') {
        MB_CHECK(v <= (std::numeric_limits<int64_t>::max() - 9) / 10, DataError, "{}: a dimension is too large", name_);
        v = v * 10 + (s_[at_++] - '0');
      }
      if (at_ < s_.size() && s_[at_] == 'L') ++at_;   // Python 2's long literals
      if (at_ == start) fail("the shape is not a tuple of whole numbers");
      dims.push_back(v);
      skip_space();
      if (peek() == ',') ++at_;
      else if (peek() != ')') fail("the shape is not a tuple of whole numbers");
    }
    ++at_;
    return dims;
  }
  void descr(const std::string& d, NpyArray& a) {
    // Byte order ('<' little, '>' big, '|' not applicable, '=' native: little here), kind, size.
    const bool ok = d.size() >= 3 && std::string_view("<>|=").find(d[0]) != std::string_view::npos &&
                    std::string_view("uifb").find(d[1]) != std::string_view::npos && d.size() <= 4;
    int bytes = 0;
    if (ok) {
      for (std::size_t i = 2; i < d.size(); ++i) bytes = d[i] >= '0' && d[i] <= '9' ? bytes * 10 + (d[i] - '0') : -1;
    }
    const bool size_ok = bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8;
    MB_CHECK(ok && size_ok && (d[1] != 'b' || bytes == 1) && (d[1] != 'f' || bytes >= 2), DataError,
             "{}: dtype '{}' is not an array of integers or floats (uint8, int64, float32, ...)", name_, d);
    a.kind = d[1];
    a.item_bytes = bytes;
    a.big_endian = d[0] == '>' && bytes > 1;
  }

  std::string_view s_;
  const std::string& name_;
  std::size_t at_ = 0;
};

uint64_t load_unsigned(const unsigned char* p, int bytes, bool big_endian) {
  uint64_t v = 0;
  for (int k = 0; k < bytes; ++k) v |= uint64_t(p[big_endian ? bytes - 1 - k : k]) << (8 * k);
  return v;
}

std::string read_file(const std::filesystem::path& path) {
  return read_file_bounded(path, uint64_t(kMaxNpyDataBytes) + kMaxHeaderBytes + 16, "one array");
}

// The four arrays' names, as keras.datasets writes them.
constexpr const char* kArrays[4] = {"x_train", "y_train", "x_test", "y_test"};

// Both splits from the four arrays (each already parsed), classes agreed between them.
DataSplit split_from_arrays(NpyArray arrays[4], const std::string& name, const std::string& where) {
  DataSplit split;
  split.name = name;
  const auto label = [&](int i) { return fmt::format("{} {}", where, kArrays[i]); };
  split.train = dataset_from_arrays(arrays[0], arrays[1], name + "/train", label(0), label(1));
  split.val = dataset_from_arrays(arrays[2], arrays[3], name + "/test", label(2), label(3));
  MB_CHECK(split.train.shape() == split.val.shape(), DataError,
           "{}: x_train holds {}x{}x{} images and x_test {}x{}x{}: both splits must have one image shape", where,
           split.train.rows, split.train.cols, split.train.channels, split.val.rows, split.val.cols,
           split.val.channels);
  const int classes = std::max(split.train.classes, split.val.classes);
  split.train.classes = split.val.classes = classes;
  spdlog::info("loaded {} from '{}': {} training and {} validation images of {}x{}x{}, {} classes (uint8, scaled "
               "by 1/255)",
               name, where, split.train.count, split.val.count, split.train.rows, split.train.cols,
               split.train.channels, classes);
  return split;
}

}  // namespace

int64_t NpyArray::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string NpyArray::dtype() const {
  const char* base = kind == 'u' ? "uint" : kind == 'i' ? "int" : kind == 'f' ? "float" : "bool";
  return kind == 'b' ? std::string(base) : fmt::format("{}{}", base, item_bytes * 8);
}

int64_t NpyArray::integer_at(int64_t i) const {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data() + data_offset) + i * item_bytes;
  const uint64_t u = load_unsigned(p, item_bytes, big_endian);
  if (kind != 'i' || item_bytes == 8) return int64_t(u);   // (uint64 beyond int64: negative, refused as a label)
  const uint64_t sign = uint64_t(1) << (8 * item_bytes - 1);
  return int64_t(u ^ sign) - int64_t(sign);
}

NpyArray parse_npy_header(std::string_view bytes, const std::string& name) {
  static constexpr char kMagic[] = "\x93NUMPY";
  MB_CHECK(bytes.size() >= 10 && std::memcmp(bytes.data(), kMagic, 6) == 0, DataError,
           "{}: not a NumPy .npy file (no \\x93NUMPY magic)", name);
  const int major = uint8_t(bytes[6]);
  MB_CHECK(major >= 1 && major <= 3, DataError, "{}: .npy format version {}.{} is not one this reader knows (1 to 3)",
           name, major, int(uint8_t(bytes[7])));
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  MB_CHECK(bytes.size() >= 8 + len_bytes, DataError, "{}: truncated in its header", name);
  const std::size_t header_len =
      std::size_t(load_unsigned(reinterpret_cast<const unsigned char*>(bytes.data() + 8), int(len_bytes), false));
  MB_CHECK(header_len <= kMaxHeaderBytes, DataError, "{}: a header of {} bytes (NumPy itself reads at most {})", name,
           header_len, kMaxHeaderBytes);
  const std::size_t start = 8 + len_bytes;
  MB_CHECK(bytes.size() >= start + header_len, DataError, "{}: truncated in its header", name);
  NpyArray a;
  HeaderParser(std::string_view(bytes).substr(start, header_len), name).parse(a);
  a.data_offset = start + header_len;
  int64_t elements = 1;
  for (int64_t d : a.shape) {
    MB_CHECK(d == 0 || elements <= kMaxNpyDataBytes / d, DataError, "{}: shape too large", name);
    elements *= d;
  }
  MB_CHECK(elements <= kMaxNpyDataBytes / a.item_bytes, DataError,
           "{}: {} elements of {} bytes: more than one array may hold here ({} bytes)", name, elements, a.item_bytes,
           kMaxNpyDataBytes);
  return a;
}

NpyArray parse_npy(std::string bytes, const std::string& name) {
  NpyArray a = parse_npy_header(bytes, name);
  const std::size_t data_bytes = std::size_t(a.size()) * std::size_t(a.item_bytes);
  const std::size_t have = bytes.size() - a.data_offset;
  MB_CHECK(have >= data_bytes, DataError, "{}: truncated: the shape needs {} bytes of data, the file holds {}", name,
           data_bytes, have);
  MB_CHECK(have == data_bytes, DataError, "{}: {} bytes after the data the shape describes", name, have - data_bytes);
  a.bytes = std::move(bytes);
  return a;
}

Dataset dataset_from_arrays(const NpyArray& x, const NpyArray& y, std::string name, const std::string& x_name,
                            const std::string& y_name) {
  MB_CHECK(x.shape.size() == 3 || x.shape.size() == 4, DataError,
           "{}: images must be N x H x W or N x H x W x C, not a {}-dimensional array", x_name, x.shape.size());
  MB_CHECK(x.kind == 'u' || x.kind == 'i', DataError,
           "{}: {} images are not read in this version: it keeps every image as bytes 0..255 and scales them by 1/255 "
           "itself; save the images as uint8 (e.g. (x * 255).round().astype('uint8') for images in 0..1)",
           x_name, x.dtype());
  const int64_t n = x.shape[0], h = x.shape[1], w = x.shape[2], c = x.shape.size() == 4 ? x.shape[3] : 1;
  MB_CHECK(n >= 1, DataError, "{}: no images", x_name);
  MB_CHECK(h >= 1 && w >= 1 && h <= kMaxSide && w <= kMaxSide, DataError,
           "{}: images of {}x{}: each side must be 1..{}", x_name, h, w, kMaxSide);
  MB_CHECK(c >= 1 && c <= kMaxChannels, DataError, "{}: {} channels (1..{})", x_name, c, kMaxChannels);
  MB_CHECK(n <= std::numeric_limits<int32_t>::max(), DataError, "{}: {} images (at most 2^31 - 1)", x_name, n);
  MB_CHECK((y.shape.size() == 1 || (y.shape.size() == 2 && y.shape[1] == 1)), DataError,
           "{}: labels must be N or N x 1 (one class number per image){}", y_name,
           y.shape.size() == 2 ? " — one-hot labels: save np.argmax(y, axis=1)" : "");
  MB_CHECK(y.kind == 'u' || y.kind == 'i', DataError, "{}: labels must be integers (class numbers), not {}", y_name,
           y.dtype());
  MB_CHECK(y.shape[0] == n, DataError, "{} holds {} images but {} holds {} labels", x_name, n, y_name, y.shape[0]);

  Dataset d;
  d.name = std::move(name);
  d.count = n;
  d.rows = int(h), d.cols = int(w), d.channels = int(c);
  d.labels.resize(std::size_t(n));
  int max_label = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = y.integer_at(i);
    MB_CHECK(v >= 0 && v <= 255, DataError, "{}: label {} of image {} is outside 0..255", y_name, v, i);
    d.labels[std::size_t(i)] = uint8_t(v);
    max_label = std::max(max_label, int(v));
  }
  d.classes = std::max(2, max_label + 1);
  const int64_t per = h * w * c;
  d.pixels.resize(std::size_t(n * per));
  const bool bytes_as_they_are = x.item_bytes == 1 && x.kind == 'u';
  for (int64_t i = 0; i < n; ++i) {
    uint8_t* img = d.pixels.data() + i * per;
    for (int64_t p = 0; p < h * w; ++p)
      for (int64_t ch = 0; ch < c; ++ch) {
        const int64_t e = i * per + p * c + ch;   // N H W C in the file, C H W here
        const int64_t v = bytes_as_they_are ? int64_t(uint8_t(x.bytes[x.data_offset + std::size_t(e)])) : x.integer_at(e);
        MB_CHECK(v >= 0 && v <= 255, DataError, "{}: pixel value {} in image {} is outside 0..255", x_name, v, i);
        img[ch * h * w + p] = uint8_t(v);
      }
  }
  return d;
}

namespace {

// A data set's arrays are large (CIFAR-10's x_train: 150 MB) and np.savez stores them
// uncompressed; the ratio limit still stops a bomb, and each array's own size limit applies.
ZipLimits npz_limits() {
  ZipLimits limits;
  limits.max_entries = 64;
  limits.max_entry_bytes = kMaxNpyDataBytes + int64_t(kMaxHeaderBytes) + 16;
  return limits;
}

DataSplit split_from_npz(const ZipArchive& zip, const std::string& name) {
  NpyArray arrays[4];
  for (int i = 0; i < 4; ++i) {
    const std::string entry = std::string(kArrays[i]) + ".npy";
    MB_CHECK(zip.contains(entry), DataError,
             "{}: no array '{}' (a data set archive holds x_train, y_train, x_test and y_test, as keras.datasets "
             "writes them)",
             name, kArrays[i]);
    arrays[i] = parse_npy(zip.read(entry), fmt::format("{} {}", name, kArrays[i]));
  }
  return split_from_arrays(arrays, std::filesystem::path(name).stem().string(), name);
}

}  // namespace

DataSplit parse_npz(std::string bytes, const std::string& name) {
  return split_from_npz(ZipArchive(std::move(bytes), name, npz_limits()), name);
}

DataSplit load_npz(const std::filesystem::path& file) {
  std::error_code ec;
  MB_CHECK(std::filesystem::is_regular_file(file, ec), DataError, "'{}' does not exist or is not a file",
           file.string());
  DataSplit split = split_from_npz(ZipArchive(file, npz_limits()), file.string());
  split.dir = file;
  return split;
}

namespace {
ImageShape image_shape_of(const NpyArray& x, const std::string& name) {
  MB_CHECK(x.shape.size() == 3 || x.shape.size() == 4, DataError,
           "{}: images must be N x H x W or N x H x W x C, not a {}-dimensional array", name, x.shape.size());
  return {int(std::min<int64_t>(x.shape[1], kMaxSide + 1)), int(std::min<int64_t>(x.shape[2], kMaxSide + 1)),
          x.shape.size() == 4 ? int(std::min<int64_t>(x.shape[3], kMaxChannels + 1)) : 1};
}
}  // namespace

ImageShape npz_image_shape(const std::filesystem::path& file) {
  const ZipArchive zip(file, npz_limits());
  const std::string name = fmt::format("{} x_train", file.string());
  MB_CHECK(zip.contains("x_train.npy"), DataError, "{}: no array 'x_train'", file.string());
  return image_shape_of(parse_npy_header(zip.read_prefix("x_train.npy", kMaxHeaderBytes + 16), name), name);
}

ImageShape npy_dir_image_shape(const std::filesystem::path& dir) {
  const auto file = dir / "x_train.npy";
  std::ifstream in(file, std::ios::binary);
  MB_CHECK(bool(in), DataError, "'{}' is missing or cannot be read", file.string());
  std::string prefix(kMaxHeaderBytes + 16, '\0');
  in.read(prefix.data(), std::streamsize(prefix.size()));
  prefix.resize(std::size_t(in.gcount()));
  return image_shape_of(parse_npy_header(prefix, file.string()), file.string());
}

bool is_npy_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const char* a : kArrays)
    if (std::filesystem::exists(dir / (std::string(a) + ".npy"), ec)) return true;
  return false;
}

DataSplit load_npy_dir(const std::filesystem::path& dir) {
  NpyArray arrays[4];
  for (int i = 0; i < 4; ++i) {
    const auto file = dir / (std::string(kArrays[i]) + ".npy");
    std::error_code ec;
    MB_CHECK(std::filesystem::is_regular_file(file, ec), DataError,
             "'{}' is missing (a NumPy data folder holds x_train.npy, y_train.npy, x_test.npy and y_test.npy)",
             file.string());
    arrays[i] = parse_npy(read_file(file), file.string());
  }
  std::error_code ec;
  auto abs = std::filesystem::weakly_canonical(dir, ec);
  std::string name = abs.filename().string();
  if (name.empty()) name = abs.parent_path().filename().string();
  DataSplit split = split_from_arrays(arrays, name.empty() ? "data" : name, dir.string());
  split.dir = dir;
  return split;
}

}  // namespace mb
