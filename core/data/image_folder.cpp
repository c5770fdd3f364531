// Image folders in Keras's class sub-folder layout (see image_folder.h).
#include "data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <system_error>

#include <fmt/format.h>

#include "data/image_decode.h"
#include "util/error.h"
#include "util/read_file.h"

namespace mb {
namespace {

// As many bytes of pixels as the other readers allow (the engines address samples with 32-bit
// indices and keep every image resident).
constexpr int64_t kMaxPixelBytes = (int64_t(1) << 31) - 1;
constexpr std::size_t kMaxClasses = 256;   // labels are bytes

bool is_image_file(const std::filesystem::directory_entry& e) {
  std::string ext = e.path().extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  std::error_code ec;
  return (ext == ".png" || ext == ".jpg" || ext == ".jpeg") && e.path().filename().string().front() != '.' &&
         e.is_regular_file(ec);
}

std::vector<std::filesystem::path> sorted_entries(const std::filesystem::path& dir, bool folders) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  MB_CHECK(!ec, DataError, "'{}' cannot be listed: {}", dir.string(), ec.message());
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    MB_CHECK(!ec, DataError, "'{}' cannot be listed: {}", dir.string(), ec.message());
    const std::string name = it->path().filename().string();
    if (name.empty() || name.front() == '.') continue;
    std::error_code type_ec;
    if (folders ? it->is_directory(type_ec) : is_image_file(*it)) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.filename() < b.filename(); });
  return out;
}

// Keras's other layout: DIR/<class>/ images with a validation_split. Looked at only as far as
// the first class folder holding an image.
bool has_class_folders_of_images(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return false;
  for (const auto& folder : sorted_entries(dir, true)) {
    std::filesystem::directory_iterator it(folder, ec);
    for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
      if (is_image_file(*it)) return true;
  }
  return false;
}

}  // namespace

bool is_image_folder(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::is_directory(dir / "train", ec) || std::filesystem::is_directory(dir / "test", ec) ||
         has_class_folders_of_images(dir);
}

ImageFolderListing list_image_folder(const std::filesystem::path& dir) {
  const std::filesystem::path train = dir / "train", test = dir / "test";
  std::error_code ec;
  MB_CHECK(std::filesystem::is_directory(train, ec) || std::filesystem::is_directory(test, ec) ||
               !has_class_folders_of_images(dir),
           DataError,
           "'{}' holds class sub-folders of images but no train/ and test/ folders: move the validation images "
           "into test/<class>/ and the others into train/<class>/ (a validation fraction is not yet an option)",
           dir.string());
  MB_CHECK(std::filesystem::is_directory(train, ec), DataError,
           "'{}' has no train/ folder: an image folder holds train/<class>/ and test/<class>/ sub-folders of PNG or "
           "JPEG files",
           dir.string());
  MB_CHECK(std::filesystem::is_directory(test, ec), DataError,
           "'{}' has no test/ folder (the validation images, in the same class sub-folders as train/)", dir.string());
  ImageFolderListing l;
  for (const auto& folder : sorted_entries(train, true)) l.classes.push_back(folder.filename().string());
  MB_CHECK(l.classes.size() >= 2, DataError, "'{}' holds {} class sub-folder(s): a classifier needs at least 2",
           train.string(), l.classes.size());
  MB_CHECK(l.classes.size() <= kMaxClasses, DataError, "'{}' holds {} class sub-folders (at most {})", train.string(),
           l.classes.size(), kMaxClasses);
  for (std::size_t c = 0; c < l.classes.size(); ++c) {
    const auto files = sorted_entries(train / l.classes[c], false);
    MB_CHECK(!files.empty(), DataError, "class folder '{}' holds no PNG or JPEG files", (train / l.classes[c]).string());
    for (const auto& f : files) l.train.push_back({f, uint8_t(c)});
  }
  for (const auto& folder : sorted_entries(test, true)) {
    const std::string name = folder.filename().string();
    const auto at = std::find(l.classes.begin(), l.classes.end(), name);
    MB_CHECK(at != l.classes.end(), DataError, "'{}' is a class that '{}' does not have", folder.string(),
             train.string());
    for (const auto& f : sorted_entries(folder, false)) l.test.push_back({f, uint8_t(at - l.classes.begin())});
  }
  MB_CHECK(!l.test.empty(), DataError, "'{}' holds no PNG or JPEG files in class sub-folders", test.string());
  MB_CHECK(l.train.size() + l.test.size() <= std::size_t(std::numeric_limits<int32_t>::max()), DataError,
           "'{}' holds more than 2^31 - 1 images", dir.string());
  return l;
}

namespace {

ImageInfo info_of(const std::filesystem::path& file, std::string& bytes) {
  bytes = read_file_bounded(file, kMaxImageFileBytes, "an image file");
  return read_image_info(bytes, file.string());
}

ImageShape shape_of(const ImageInfo& info) { return {info.height, info.width, info.colour ? 3 : 1}; }

Dataset decode_all(const std::vector<ImageFolderListing::File>& files, const ImageShape& shape,
                   const std::filesystem::path& first, std::string name, int classes) {
  Dataset d;
  d.name = std::move(name);
  d.rows = shape.h, d.cols = shape.w, d.channels = shape.c;
  d.classes = classes;
  d.count = int64_t(files.size());
  const int64_t per = d.pixels_per_image(), plane = int64_t(d.rows) * d.cols;
  MB_CHECK(d.count <= kMaxPixelBytes / per, DataError, "{}: {} images of {}x{}x{} are more than {} bytes", d.name,
           d.count, d.rows, d.cols, d.channels, kMaxPixelBytes);
  d.pixels.resize(std::size_t(d.count * per));
  d.labels.reserve(files.size());
  std::vector<uint8_t> interleaved(static_cast<std::size_t>(per));
  std::string bytes;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string file = files[i].path.string();
    const ImageInfo info = info_of(files[i].path, bytes);
    MB_CHECK(info.height == d.rows && info.width == d.cols, DataError,
             "{} is {}x{} pixels (height x width) but {} is {}x{}: every image must have one size (resize them "
             "first: a target size is not yet an option)",
             file, info.height, info.width, first.string(), d.rows, d.cols);
    decode_image(bytes, info, d.channels, interleaved.data(), file);
    uint8_t* img = d.pixels.data() + int64_t(i) * per;
    for (int64_t p = 0; p < plane; ++p)   // H W C in the file, C H W here
      for (int c = 0; c < d.channels; ++c) img[c * plane + p] = interleaved[std::size_t(p * d.channels + c)];
    d.labels.push_back(files[i].label);
  }
  return d;
}

}  // namespace

ImageFolderSummary summarise_image_folder(const std::filesystem::path& dir) {
  const ImageFolderListing l = list_image_folder(dir);
  std::string bytes;
  return {shape_of(info_of(l.train.front().path, bytes)), int(l.classes.size()), int64_t(l.train.size()),
          int64_t(l.test.size())};
}

DataSplit load_image_folder(const std::filesystem::path& dir) {
  const ImageFolderListing l = list_image_folder(dir);
  std::string bytes;
  const ImageShape shape = shape_of(info_of(l.train.front().path, bytes));
  DataSplit split;
  split.name = dir.filename().empty() ? dir.parent_path().filename().string() : dir.filename().string();
  split.dir = dir;
  const int classes = int(l.classes.size());
  split.train = decode_all(l.train, shape, l.train.front().path, split.name + "/train", classes);
  split.val = decode_all(l.test, shape, l.train.front().path, split.name + "/test", classes);
  return split;
}

}  // namespace mb
