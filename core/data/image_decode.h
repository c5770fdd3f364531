// PNG and JPEG files decoded into the bytes a Dataset holds, with Debian's well-kept decoders:
// libpng's simplified API and libjpeg-turbo's TurboJPEG API (the decoder Pillow uses, with the
// same defaults: accurate integer IDCT, fancy upsampling, so a JPEG decodes to Pillow's pixels).
// Hostile files are refused before they cost memory or time: the size in the header is checked
// against the models' limit (model/model_shape.h's kMaxImageSide) before any pixel is decoded —
// an image bomb of 100,000 x 100,000 pixels is a header of a few bytes —, a progressive JPEG
// may have at most 500 scans, and a warning of the decoder (a truncated or corrupt file) is an
// error. Every refusal is a DataError naming the file.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace mb {

enum class ImageCodec { Png, Jpeg };

// What a file's header says. `colour`: RGB (or a palette, or CMYK) rather than grey levels.
struct ImageInfo {
  ImageCodec codec = ImageCodec::Png;
  int height = 0, width = 0;
  bool colour = false;
};

// Whether the bytes start as a PNG or a JPEG file does.
bool looks_like_image(std::string_view bytes);

// The header alone; `name` stands for the file in messages.
ImageInfo read_image_info(std::string_view bytes, const std::string& name);

// The whole image into `out` (height x width x channels bytes, rows top to bottom, channels
// interleaved) as `channels` (1 or 3) channels: grey levels are repeated into red, green and
// blue; colour becomes grey as Pillow's convert("L") does (ITU-R 601-2 luma); an alpha channel
// is dropped, as Pillow's convert("RGB") and TensorFlow's decode_png(channels=3) drop it.
void decode_image(std::string_view bytes, const ImageInfo& info, int channels, uint8_t* out, const std::string& name);

}  // namespace mb
