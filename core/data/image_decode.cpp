// PNG and JPEG decoding (see image_decode.h).
#include "data/image_decode.h"

#include <cstring>
#include <memory>
#include <vector>

#include <png.h>
#include <turbojpeg.h>

#include "model/model_shape.h"
#include "util/error.h"

namespace mb {
namespace {

constexpr std::string_view kPngMagic{"\x89PNG\r\n\x1a\n", 8};
constexpr std::string_view kJpegMagic{"\xff\xd8\xff", 3};

bool is_png(std::string_view b) { return b.substr(0, kPngMagic.size()) == kPngMagic; }
bool is_jpeg(std::string_view b) { return b.substr(0, kJpegMagic.size()) == kJpegMagic; }

void check_size(int height, int width, const std::string& name) {
  MB_CHECK(height >= 1 && width >= 1, DataError, "{}: the header says {}x{} pixels", name, height, width);
  MB_CHECK(height <= kMaxImageSide && width <= kMaxImageSide, DataError,
           "{}: {}x{} pixels (height x width); a model here reads at most {} on a side (scale the images down "
           "first)",
           name, height, width, kMaxImageSide);
}

// Pillow's convert("L"): L = R * 299/1000 + G * 587/1000 + B * 114/1000, in 16-bit fixed point.
uint8_t luma(const uint8_t* rgb) {
  return uint8_t((rgb[0] * 19595u + rgb[1] * 38470u + rgb[2] * 7471u + 0x8000u) >> 16);
}

// `in` holds `from` channels per pixel (1 grey, 2 grey + alpha, 3 RGB, 4 RGBA); `out` gets `to`.
void convert_pixels(const uint8_t* in, int from, uint8_t* out, int to, std::size_t pixels) {
  for (std::size_t p = 0; p < pixels; ++p, in += from, out += to) {
    const bool grey = from <= 2;
    if (to == 1) {
      out[0] = grey ? in[0] : luma(in);
    } else {
      out[0] = in[0];
      out[1] = in[grey ? 0 : 1];
      out[2] = in[grey ? 0 : 2];
    }
  }
}

// libpng's simplified reader; png_image_free on every way out.
struct PngImage {
  png_image image{};
  PngImage() { image.version = PNG_IMAGE_VERSION; }
  ~PngImage() { png_image_free(&image); }
  PngImage(const PngImage&) = delete;
  PngImage& operator=(const PngImage&) = delete;
};

ImageInfo png_info(std::string_view bytes, PngImage& png, const std::string& name) {
  MB_CHECK(png_image_begin_read_from_memory(&png.image, bytes.data(), bytes.size()) != 0, DataError,
           "{}: not a readable PNG file ({})", name, png.image.message);
  ImageInfo info{ImageCodec::Png, int(std::min<png_uint_32>(png.image.height, 1u << 30)),
                 int(std::min<png_uint_32>(png.image.width, 1u << 30)),
                 (png.image.format & PNG_FORMAT_FLAG_COLOR) != 0};
  check_size(info.height, info.width, name);
  return info;
}

// The header read again must be the one the caller sized `out` by.
void check_same(const ImageInfo& fresh, const ImageInfo& info, const std::string& name) {
  MB_CHECK(fresh.codec == info.codec && fresh.height == info.height && fresh.width == info.width &&
               fresh.colour == info.colour,
           DataError, "{}: the file changed while it was read", name);
}

void decode_png(std::string_view bytes, const ImageInfo& info, int channels, uint8_t* out, const std::string& name) {
  PngImage png;
  check_same(png_info(bytes, png, name), info, name);
  // Decoded with alpha, which is then dropped: without a background, libpng would composite
  // onto whatever the buffer held. 8-bit sRGB output: no premultiplication.
  const int with_alpha = info.colour ? 4 : 2;
  png.image.format = info.colour ? PNG_FORMAT_RGBA : PNG_FORMAT_GA;
  std::vector<uint8_t> decoded(std::size_t(info.height) * std::size_t(info.width) * std::size_t(with_alpha));
  MB_CHECK(png_image_finish_read(&png.image, nullptr, decoded.data(), 0, nullptr) != 0, DataError,
           "{}: corrupt PNG data ({})", name, png.image.message);
  // A warning is kept quiet: the common ones are about ancillary chunks (an sRGB profile
  // known to be wrong) that Pillow ignores too; damaged image data is an error.
  convert_pixels(decoded.data(), with_alpha, out, channels, std::size_t(info.height) * std::size_t(info.width));
}

using TjHandle = std::unique_ptr<void, int (*)(tjhandle)>;

TjHandle jpeg_decoder(const std::string& name) {
  TjHandle h(tjInitDecompress(), tjDestroy);
  MB_CHECK(h != nullptr, DataError, "{}: the JPEG decoder could not start ({})", name, tjGetErrorStr2(nullptr));
  return h;
}

ImageInfo jpeg_info(std::string_view bytes, tjhandle h, const std::string& name) {
  int width = 0, height = 0, subsampling = 0, colourspace = 0;
  MB_CHECK(tjDecompressHeader3(h, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), &width,
                               &height, &subsampling, &colourspace) == 0,
           DataError, "{}: not a readable JPEG file ({})", name, tjGetErrorStr2(h));
  check_size(height, width, name);
  return {ImageCodec::Jpeg, height, width, colourspace != TJCS_GRAY};
}

void decode_jpeg(std::string_view bytes, const ImageInfo& info, int channels, uint8_t* out, const std::string& name) {
  const TjHandle h = jpeg_decoder(name);
  check_same(jpeg_info(bytes, h.get(), name), info, name);
  const int from = info.colour ? 3 : 1;
  std::vector<uint8_t> decoded(std::size_t(info.height) * std::size_t(info.width) * std::size_t(from));
  // STOPONWARNING: a truncated or corrupt file is refused, as Pillow refuses it by default.
  // LIMITSCANS: at most 500 scans, the guard against progressive JPEGs that take minutes.
  const int flags = TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS;
  MB_CHECK(tjDecompress2(h.get(), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), decoded.data(),
                         info.width, 0, info.height, info.colour ? TJPF_RGB : TJPF_GRAY, flags) == 0,
           DataError, "{}: corrupt JPEG data ({})", name, tjGetErrorStr2(h.get()));
  convert_pixels(decoded.data(), from, out, channels, std::size_t(info.height) * std::size_t(info.width));
}

}  // namespace

bool looks_like_image(std::string_view bytes) { return is_png(bytes) || is_jpeg(bytes); }

ImageInfo read_image_info(std::string_view bytes, const std::string& name) {
  if (is_png(bytes)) {
    PngImage png;
    return png_info(bytes, png, name);
  }
  MB_CHECK(is_jpeg(bytes), DataError, "{}: neither a PNG nor a JPEG file (its first bytes say otherwise)", name);
  return jpeg_info(bytes, jpeg_decoder(name).get(), name);
}

void decode_image(std::string_view bytes, const ImageInfo& info, int channels, uint8_t* out, const std::string& name) {
  MB_CHECK(channels == 1 || channels == 3, DataError, "{}: {} channels asked for (1 or 3)", name, channels);
  if (info.codec == ImageCodec::Png)
    decode_png(bytes, info, channels, out, name);
  else
    decode_jpeg(bytes, info, channels, out, name);
}

}  // namespace mb
