// Keras model files as mirrorbench models (see keras_model.h): find the layer list and input
// shape wherever each format keeps them, then translate layer by layer (keras_layers.h).
#include "keras/keras_model.h"

#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "archive/zip_archive.h"
#include "keras/keras_layers.h"
#include "model/model_text.h"
#include "util/error.h"
#include "util/read_file.h"

namespace mb {
namespace {

using json = nlohmann::json;

constexpr std::size_t kMaxJsonBytes = std::size_t(16) << 20;   // a model's JSON is kilobytes
constexpr int kMaxDepth = 64;                                   // Keras nests a dozen levels
constexpr std::size_t kMaxLayers = 1000;

json parse_bounded(std::string_view text, std::string_view origin) {
  MB_CHECK(text.size() <= kMaxJsonBytes, DataError, "{}: {} bytes of JSON, more than a model's {} allowed", origin,
           text.size(), kMaxJsonBytes);
  try {
    return json::parse(text.begin(), text.end(), [&](int depth, json::parse_event_t, json&) {
      if (depth > kMaxDepth) throw DataError(fmt::format("{}: JSON nested deeper than {} levels", origin, kMaxDepth));
      return true;
    });
  } catch (const json::exception& e) {
    throw DataError(fmt::format("{}: not valid JSON ({})", origin, e.what()));
  }
}

std::string string_or(const json& j, const char* key, std::string fallback = {}) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// The Keras names of the tensors a functional layer's node reads: Keras 2 and TF.js write
// [[["name", node, tensor, {kwargs}], ...]], Keras 3 {"args": [{"config": {"keras_history":
// ["name", node, tensor]}}], "kwargs": {...}}.
void inbound_names(const json& node, std::vector<std::string>& out) {
  if (node.is_array()) {
    if (node.size() >= 3 && node[0].is_string() && node[1].is_number_integer()) {
      out.push_back(node[0].get<std::string>());
      return;
    }
    for (const json& e : node) inbound_names(e, out);
  } else if (node.is_object()) {
    if (const auto h = node.find("keras_history"); h != node.end()) return inbound_names(*h, out);
    for (const auto& [key, value] : node.items()) inbound_names(value, out);
  }
}

struct Found {
  std::string format;
  const json* model = nullptr;   // {"class_name", "config"}
};

// Where the model object is: the root (Keras 2 and 3), or a TF.js file's modelTopology (its
// model_config when converted from Keras).
Found find_model(const json& root, std::string_view origin) {
  MB_CHECK(root.is_object(), ConfigError, "{}: not a Keras model (a JSON object with class_name and config)", origin);
  if (const auto topo = root.find("modelTopology"); topo != root.end()) {
    MB_CHECK(topo->is_object(), ConfigError, "{}: a TensorFlow.js file whose modelTopology is not an object", origin);
    const auto inner = topo->find("model_config");
    const std::string by = string_or(root, "generatedBy");
    Found f{"TensorFlow.js model.json" + (by.empty() ? std::string() : " (" + by + ")"),
            inner != topo->end() ? &*inner : &*topo};
    return f;
  }
  MB_CHECK(root.contains("class_name") && root.contains("config"), ConfigError,
           "{}: not a Keras model: no class_name and config (model.to_json(), a .keras file's config.json, or a "
           "TensorFlow.js model.json)",
           origin);
  if (root.contains("module")) return {"Keras 3 config.json", &root};
  const std::string version = string_or(root, "keras_version");
  return {version.empty() ? "Keras JSON" : fmt::format("Keras {} JSON (model.to_json())", version), &root};
}

// The model's layers in order, each with its index in Keras's model.layers (Sequential leaves
// the InputLayer out of it, Functional keeps it).
std::vector<KerasLayer> layer_list(const json& model, std::string_view origin, std::string& name) {
  MB_CHECK(model.is_object() && model.contains("config"), ConfigError,
           "{}: not a Keras model: its model has no class_name and config", origin);
  const std::string cls = string_or(model, "class_name");
  const json& config = model.at("config");
  if (config.is_object()) name = string_or(config, "name");
  const json* layers =
      config.is_array() ? &config : config.is_object() && config.contains("layers") ? &config.at("layers") : nullptr;
  MB_CHECK(layers && layers->is_array(), ConfigError, "{}: a {} model without a layer list", origin, cls);
  MB_CHECK(layers->size() <= kMaxLayers, ConfigError, "{}: {} layers, more than the {} read", origin, layers->size(),
           kMaxLayers);
  const bool functional = cls == "Functional" || cls == "Model";
  MB_CHECK(cls == "Sequential" || functional, ConfigError,
           "{}: a {} model: mirrorbench reads Sequential models and functional chains of layers", origin, cls);
  std::vector<KerasLayer> out;
  int index = 0;
  for (const json& l : *layers) {
    MB_CHECK(l.is_object() && l.contains("class_name") && l.at("class_name").is_string(), ConfigError,
             "{}: layer {} has no class_name", origin, out.size());
    KerasLayer k;
    k.cls = l.at("class_name").get<std::string>();
    k.config = l.contains("config") && l.at("config").is_object() ? &l.at("config") : nullptr;
    k.name = k.config ? string_or(*k.config, "name", string_or(l, "name")) : string_or(l, "name");
    k.registered_name = string_or(l, "registered_name");
    k.build_config = l.contains("build_config") ? &l.at("build_config") : nullptr;
    k.index = (!functional && k.cls == "InputLayer") ? -1 : index++;
    if (functional && l.contains("inbound_nodes")) {
      const json& nodes = l.at("inbound_nodes");
      k.node_count = nodes.is_array() ? int(nodes.size()) : 0;
      inbound_names(nodes, k.inputs);
    }
    out.push_back(std::move(k));
  }
  if (functional) check_chain(out, origin);
  if (!functional && config.is_object() && config.contains("build_input_shape") && !out.empty())
    out.front().sequential_build_shape = &config.at("build_input_shape");
  return out;
}

KerasImport import_model(const json& root, std::string_view origin, std::string format_prefix = {}) {
  const Found found = find_model(root, origin);
  KerasImport result{ModelSpec(), format_prefix.empty() ? found.format : std::string(format_prefix), {}, {}};
  const std::vector<KerasLayer> layers = layer_list(*found.model, origin, result.name);
  TranslatedModel t = translate_layers(layers, origin);
  try {
    result.model = ModelSpec(t.input, std::move(t.layers));
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: {}", origin, e.what()));
  }
  result.notes = std::move(t.notes);
  result.notes.push_back(
      "architecture only: weights, initializers and the training configuration are ignored; the model trains from "
      "Keras's default initialisation (Glorot-uniform kernels, zero biases)");
  return result;
}

std::string read_model_json(const std::filesystem::path& path) {
  std::error_code ec;
  MB_CHECK(std::filesystem::is_regular_file(path, ec), ConfigError, "--model {}: no such file", path.string());
  return read_file_bounded(path, kMaxJsonBytes, "a model's JSON");
}

bool starts_with_bytes(const std::filesystem::path& path, std::string_view magic) {
  std::ifstream in(path, std::ios::binary);
  std::string head(magic.size(), '\0');
  return in.read(head.data(), std::streamsize(head.size())) && head == magic;
}

constexpr std::string_view kZipMagic{"PK\x03\x04", 4};
constexpr std::string_view kHdf5Magic{"\x89HDF\r\n\x1a\n", 8};

ZipLimits keras_zip_limits() {
  ZipLimits l;
  l.max_entry_bytes = int64_t(kMaxJsonBytes);   // only the JSON entries are read
  return l;
}

KerasImport import_archive(const ZipArchive& zip) {
  MB_CHECK(zip.contains("config.json"), ConfigError,
           "{}: a zip without config.json: not a Keras 3 .keras file (entries: {})", zip.name(),
           fmt::join(zip.entries().size() > 8 ? std::vector<std::string>{"..."} : zip.entries(), ", "));
  std::string format = "Keras 3 .keras file";
  if (zip.contains("metadata.json")) {
    const json meta = parse_bounded(zip.read("metadata.json"), zip.name() + ":metadata.json");
    if (meta.is_object() && !string_or(meta, "keras_version").empty())
      format = fmt::format("Keras {} .keras file", string_or(meta, "keras_version"));
  }
  return import_model(parse_bounded(zip.read("config.json"), zip.name() + ":config.json"), zip.name(), format);
}

}  // namespace

bool names_model_file(std::string_view value) {
  const auto ends = [&](std::string_view ext) { return value.size() > ext.size() && value.ends_with(ext); };
  return value.find('/') != std::string_view::npos || ends(".json") || ends(".keras") || ends(".h5") || ends(".hdf5");
}

KerasImport import_keras_json(std::string_view text, std::string_view origin) {
  return import_model(parse_bounded(text, origin), origin);
}

KerasImport import_keras_archive(std::string bytes, std::string_view origin) {
  return import_archive(ZipArchive(std::move(bytes), std::string(origin), keras_zip_limits()));
}

KerasImport import_keras_file(const std::filesystem::path& path) {
  const std::string origin = path.string();
  std::error_code ec;
  MB_CHECK(std::filesystem::is_regular_file(path, ec), ConfigError, "--model {}: no such file", origin);
  MB_CHECK(!starts_with_bytes(path, kHdf5Magic), ConfigError,
           "{}: an HDF5 Keras file (.h5), which mirrorbench does not read: save the architecture with "
           "open('model.json', 'w').write(model.to_json()), or as a Keras 3 .keras file",
           origin);
  if (starts_with_bytes(path, kZipMagic)) return import_archive(ZipArchive(path, keras_zip_limits()));
  return import_keras_json(read_model_json(path), origin);
}

ModelSpec model_from_source(std::string_view value) {
  if (names_model_file(value)) return import_keras_file(std::filesystem::path(std::string(value))).model;
  return model_from_text(value);
}

}  // namespace mb
