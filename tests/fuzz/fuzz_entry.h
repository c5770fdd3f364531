// The fuzz targets' bodies, shared by the libFuzzer executables (fuzz_*.cpp) and by
// test_fuzz_corpus, which replays every corpus file through them with the normal compiler.
// Each parses one input through a parser's in-memory entry point and returns whether it
// parsed (true) or was refused with a DataError (false); any other exception escapes, and a
// parsed result that breaks its own invariants traps. Both are findings. (The model text's
// parser refuses with a ConfigError, an argument's error, instead.)
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/dataset.h"
#include "archive/zip_archive.h"
#include "data/cifar_reader.h"
#include "data/image_decode.h"
#include "data/numpy_reader.h"
#include "data/data_source.h"
#include "data/synthetic.h"
#include "keras/keras_model.h"
#include "model/cnn_spec.h"
#include "model/model_shape.h"
#include "model/model_spec.h"
#include "model/model_summary.h"
#include "model/model_text.h"
#include "records/checkpoint.h"
#include "records/run_record.h"
#include "util/error.h"

namespace mb::fuzz {

// Input: a 2-byte little-endian length n, then n bytes of the images file, then the labels
// file (each raw or gzip). A short input leaves the later parts empty.
inline bool idx(std::string_view input) {
  std::string_view images, labels;
  if (input.size() >= 2) {
    const std::size_t n = std::size_t(uint8_t(input[0])) | (std::size_t(uint8_t(input[1])) << 8);
    const std::string_view rest = input.substr(2);
    images = rest.substr(0, n);
    labels = rest.substr(images.size());
  }
  try {
    const Dataset d = parse_idx_pair(images, labels, "fuzz");
    if (d.count < 1 || d.count > kMaxIdxImages || d.rows != 28 || d.cols != 28 ||
        d.pixels.size() != std::size_t(d.count) * 784 || d.labels.size() != std::size_t(d.count))
      __builtin_trap();
    for (uint8_t l : d.labels)
      if (l >= 10) __builtin_trap();
    return true;
  } catch (const DataError&) {
    return false;
  }
}

// Input: one mode byte, then a safetensors file. With an odd mode byte the file is followed
// by zero bytes for every tensor of the model (487,720), so that short inputs with a valid
// header reach the tensor checks and the accepting path; with an even one it is taken as is
// (the truncation checks).
inline bool checkpoint(std::string_view input) {
  if (input.empty()) return false;
  std::string file(input.substr(1));
  if (uint8_t(input[0]) & 1) file.append(cnn::kReferenceParams * sizeof(float), '\0');
  try {
    if (load_checkpoint_bytes(file, "fuzz").params.size() != cnn::kReferenceParams) __builtin_trap();
    return true;
  } catch (const DataError&) {
    return false;
  }
}

// Input: a run record's JSON text. A record that parsed must survive writing and reading
// back (the history rewrites records when a run is renamed).
inline bool run_record(std::string_view input) {
  try {
    const RunRecord r = parse_run_record(input);
    const std::string text = to_json(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    const RunRecord back = parse_run_record(text);
    if (back.id.empty() || back.status != r.status || back.epochs.size() != r.epochs.size() ||
        back.config.seed != r.config.seed || back.config.gpu_models.size() != r.config.gpu_models.size())
      __builtin_trap();
    return true;
  } catch (const DataError&) {
    return false;
  }
}

// Input: a model's one-line text or preset name (--model, the GUI's field, records). A model
// that parsed must come back equal from its canonical text, which must itself be a fixed
// point; its inferred shapes must chain, be positive and stay in the limits; its parameter
// tensors must tile the flat buffer exactly (param_count, offsets); its name must read back
// to it; the summary must not throw. Only counts are checked: nothing parameter-sized is ever
// allocated (param_count may be up to kMaxParams, 1 GiB of floats).
inline bool model_text(std::string_view input) {
  try {
    const ModelSpec m = model_from_text(input);
    const std::string text = mb::model_text(m);
    const ModelSpec back = model_from_text(text);
    if (!(back == m) || mb::model_text(back) != text || back.param_count() != m.param_count()) __builtin_trap();
    if (!(model_from_text(m.name()) == m)) __builtin_trap();

    const ModelShape& s = m.shape();
    const auto positive = [](const ImageShape& i) { return i.h >= 1 && i.w >= 1 && i.c >= 1; };
    if (!(s.input == m.input()) || !positive(s.input) || s.input.h > kMaxImageSide || s.input.w > kMaxImageSide ||
        s.input.c > kMaxChannels || s.layers.size() != m.layers().size() || s.layers.empty())
      __builtin_trap();
    ImageShape cur = s.input;
    std::size_t layer_params = 0;
    for (std::size_t i = 0; i < s.layers.size(); ++i) {
      const LayerShape& l = s.layers[i];
      if (!(l.layer == m.layers()[i]) || !(l.in == cur) || !positive(l.out) ||
          (l.flat_out && (l.out.h != 1 || l.out.w != 1)) || l.name.empty())
        __builtin_trap();
      cur = l.out;
      layer_params += l.param_count;
    }
    const Layer& last = s.layers.back().layer;
    if (last.kind != LayerKind::Dense || last.activation != Activation::Linear || s.classes != last.units ||
        s.classes < 2 || s.classes > kMaxClasses)
      __builtin_trap();
    std::size_t offset = 0;
    for (const ParamTensor& p : s.params) {
      if (p.rank < 1 || p.rank > 4 || p.offset != offset || p.layer < 0 || std::size_t(p.layer) >= s.layers.size())
        __builtin_trap();
      std::size_t size = 1;
      for (int d = 0; d < p.rank; ++d) {
        if (p.shape[std::size_t(d)] < 1) __builtin_trap();
        size *= std::size_t(p.shape[std::size_t(d)]);
      }
      if (size != p.size) __builtin_trap();
      offset += p.size;
    }
    if (offset != m.param_count() || layer_params != m.param_count() || m.param_count() > kMaxParams)
      __builtin_trap();

    const std::string summary = model_summary_text(m, 128);
    const nlohmann::json json = model_summary_json(m, 128);
    if (summary.empty() || json.at("total_params").get<std::size_t>() != m.param_count() ||
        json.at("text").get<std::string>() != text || json.dump().empty())
      __builtin_trap();
    return true;
  } catch (const ConfigError&) {
    return false;
  } catch (const DataError&) {
    return false;
  }
}

// Input: a --data value. A synthetic source that parsed must write back to a word that reads
// back to the same spec, within the limits, and (when small) make images of its shape whose
// labels are below its class count. Anything else is "not synthetic" (nullopt) or refused.
inline bool data_source(std::string_view input) {
  try {
    const auto spec = parse_synthetic_source(input);
    if (!spec) return false;
    if (spec->shape.h < 1 || spec->shape.w < 1 || spec->shape.c < 1 || spec->shape.h > kMaxImageSide ||
        spec->shape.w > kMaxImageSide || spec->shape.c > kMaxChannels || spec->classes < 2 || spec->classes > kMaxClasses)
      __builtin_trap();
    const auto back = parse_synthetic_source(synthetic_source(*spec));
    if (!back || !(*back == *spec)) __builtin_trap();
    if (spec->shape.size() <= (1 << 14)) {
      const Dataset d = make_synthetic_images(*spec, 3, 1, "fuzz");
      if (d.pixels.size() != std::size_t(3 * spec->shape.size()) || d.labels.size() != 3) __builtin_trap();
      for (uint8_t l : d.labels)
        if (l >= spec->classes) __builtin_trap();
    }
    return true;
  } catch (const ConfigError&) {
    return false;
  }
}

// Input: a Keras model file's bytes (JSON, or a .keras zip when it starts with "PK"). A model
// that imported must be a valid model whose text reads back to it; anything else is refused
// as data (DataError) or as a model mirrorbench does not train (ConfigError).
inline bool keras(std::string_view input) {
  try {
    const KerasImport k = input.starts_with("PK") ? import_keras_archive(std::string(input), "fuzz.keras")
                                                 : import_keras_json(input, "fuzz.json");
    if (!(model_from_text(mb::model_text(k.model)) == k.model) || k.model.layers().empty() || k.notes.empty())
      __builtin_trap();
    return true;
  } catch (const ConfigError&) {
    return false;
  } catch (const DataError&) {
    return false;
  }
}

// Input: a zip archive. Every entry listed is read within small limits (or refused), and what
// is read is never longer than the limit.
inline bool zip(std::string_view input) {
  ZipLimits limits;
  limits.max_entries = 64;
  limits.max_entry_bytes = 1 << 20;
  try {
    const ZipArchive z(std::string(input), "fuzz.zip", limits);
    for (const std::string& name : z.entries()) {
      try {
        if (z.read(name).size() > std::size_t(limits.max_entry_bytes)) __builtin_trap();
      } catch (const DataError&) {
      }
    }
    return true;
  } catch (const DataError&) {
    return false;
  }
}

// Input: a NumPy data set: an .npz archive when it starts with "PK" (x_train, y_train, x_test,
// y_test), else one .npy file, read as images (with as many zero labels) when it parses. A
// data set that loaded must hold what it says: counts, shapes, labels below its classes.
inline void check_dataset(const Dataset& d) {
  if (d.count < 1 || d.rows < 1 || d.cols < 1 || d.channels < 1 ||
      d.pixels.size() != std::size_t(d.count * d.pixels_per_image()) || d.labels.size() != std::size_t(d.count))
    __builtin_trap();
  for (uint8_t l : d.labels)
    if (l >= d.classes) __builtin_trap();
}
inline bool numpy(std::string_view input) {
  try {
    if (input.starts_with("PK")) {
      const DataSplit s = parse_npz(std::string(input), "fuzz.npz");
      check_dataset(s.train);
      check_dataset(s.val);
      if (s.train.shape() != s.val.shape() || s.train.classes != s.val.classes) __builtin_trap();
      return true;
    }
    const NpyArray x = parse_npy(std::string(input), "fuzz.npy");
    if (x.data_offset + std::size_t(x.size()) * std::size_t(x.item_bytes) != x.bytes.size()) __builtin_trap();
    if (x.shape.empty() || x.shape[0] < 1 || x.shape[0] > 4096) return true;
    const std::string n = std::to_string(x.shape[0]);
    std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': (" + n + ",), }\n";
    std::string y = std::string("\x93NUMPY\x01\x00", 8);
    y += char(header.size() & 0xff);
    y += char(header.size() >> 8);
    y += header + std::string(std::size_t(x.shape[0]), '\0');
    check_dataset(dataset_from_arrays(x, parse_npy(y, "fuzz labels"), "fuzz", "x", "y"));
    return true;
  } catch (const DataError&) {
    return false;
  }
}

// Input: one CIFAR-10 binary batch file.
inline bool cifar(std::string_view input) {
  try {
    Dataset d;
    d.rows = d.cols = 32;
    d.channels = 3;
    d.classes = 10;
    append_cifar_batch(input, "fuzz.bin", d);
    check_dataset(d);
    return true;
  } catch (const DataError&) {
    return false;
  }
}

// Input: one PNG or JPEG file. A header that reads decodes, to grey and to RGB, into buffers of
// exactly the size the header said (ASan sees a byte written past them); what decoded is
// decoded again to the same bytes (the decoders keep no state between files).
inline bool image(std::string_view input) {
  try {
    const ImageInfo info = read_image_info(input, "fuzz.png");
    if (info.height < 1 || info.width < 1 || info.height > kMaxImageSide || info.width > kMaxImageSide)
      __builtin_trap();
    const std::size_t pixels = std::size_t(info.height) * std::size_t(info.width);
    std::vector<uint8_t> grey(pixels), rgb(3 * pixels), again(3 * pixels);
    decode_image(input, info, 1, grey.data(), "fuzz.png");
    decode_image(input, info, 3, rgb.data(), "fuzz.png");
    decode_image(input, info, 3, again.data(), "fuzz.png");
    if (rgb != again) __builtin_trap();
    return true;
  } catch (const DataError&) {
    return false;
  }
}

}  // namespace mb::fuzz
