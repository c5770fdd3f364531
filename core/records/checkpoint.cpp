// safetensors checkpoints of the flat parameter buffer: one F32 tensor per parameter tensor of
// the model (model/model_shape.h), written atomically, read back with every header field checked.
#include "records/checkpoint.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "model/model_spec.h"
#include "model/model_text.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace mb {
namespace {

using nlohmann::json;

// safetensors data is little-endian; the buffer is copied as-is.
static_assert(std::endian::native == std::endian::little, "checkpoint I/O assumes a little-endian host");

// Real headers for this model are ~1 KB; the cap (the safetensors library's own limit)
// keeps a corrupt length from allocating.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

void put_u64_le(char* dst, uint64_t v) {
  for (int i = 0; i < 8; ++i) dst[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

uint64_t get_u64_le(const unsigned char* src) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | src[i];
  return v;
}

json shape_json(const ParamTensor& p) {
  json shape = json::array();
  for (int d = 0; d < p.rank; ++d) shape.push_back(p.shape[static_cast<std::size_t>(d)]);
  return shape;
}

// A header value for a message: short scalars and flat arrays as JSON, anything else by its
// type. dump() recurses, so a hostile header nested a million levels deep would overflow the
// stack while the error is being written.
std::string describe(const json& v) {
  const bool flat = !v.is_structured() ||
                    (v.is_array() && v.size() <= 8 && std::none_of(v.begin(), v.end(), [](const json& e) {
                       return e.is_structured();
                     }));
  if (!flat) return fmt::format("({} of {} entries)", v.type_name(), v.size());
  std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

// The model a header describes: its metadata's model text; without one (files of older
// versions, or PyTorch's), the reference family with fc1.weight's rows as the dense width (a
// width out of range leaves the reference model, whose shape check then names the tensor and
// both shapes).
ModelSpec model_of_header(const json& header, const std::string& name) {
  const auto meta = header.find("__metadata__");
  if (meta != header.end() && meta->is_object()) {
    const auto text = meta->find("model");
    if (text != meta->end() && text->is_string()) {
      const std::string t = text->get<std::string>();
      try {
        return model_from_text(t);
      } catch (const ConfigError& e) {
        throw DataError(fmt::format("checkpoint '{}': its model '{}' is not one this version trains: {}", name,
                                    t.size() > 200 ? t.substr(0, 197) + "..." : t, e.what()));
      }
    }
  }
  const auto fc1 = header.find("fc1.weight");
  if (fc1 == header.end() || !fc1->is_object()) return {};
  const auto shape = fc1->find("shape");
  if (shape == fc1->end() || !shape->is_array() || shape->size() != 2 || !(*shape)[0].is_number_unsigned()) return {};
  const auto rows = (*shape)[0].get<uint64_t>();
  if (rows < 1 || rows > uint64_t(kMaxUnits)) return {};
  return reference_family(int(rows));
}

// The whole check, on a file of `size` bytes whose ranges `read(offset, dst, n)` fetches
// (false on a short read): shared by the file and the in-memory entry points.
template <typename Read>
Checkpoint parse_checkpoint(uint64_t size, Read&& read, const std::string& name) {
  if (size < 8) throw DataError(fmt::format("checkpoint '{}' is truncated: {} bytes, less than the 8-byte header length", name, size));
  unsigned char len_bytes[8];
  if (!read(0, len_bytes, 8)) throw DataError(fmt::format("checkpoint '{}' is unreadable: short read in the header length", name));
  const uint64_t header_len = get_u64_le(len_bytes);
  if (header_len >= kMaxHeaderBytes || header_len > size - 8)
    throw DataError(fmt::format("checkpoint '{}' is corrupt or truncated: header length {} does not fit a {}-byte file "
                                "(and must be below {})",
                                name, header_len, size, kMaxHeaderBytes));
  std::string text(header_len, '\0');
  if (!read(8, text.data(), header_len))
    throw DataError(fmt::format("checkpoint '{}' is unreadable: short read in the header", name));
  json header = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    throw DataError(fmt::format("checkpoint '{}' is corrupt: its header is not a JSON object", name));

  const uint64_t data_size = size - 8 - header_len;
  const ModelSpec model = model_of_header(header, name);
  // Before allocating what a large model asks for (up to 1 GiB): the file must hold that much
  // data. (The reference's half megabyte is allocated first, as it always was, so that the
  // per-tensor checks below name what is wrong.)
  if (!model.is_reference() && data_size < model.param_count() * sizeof(float))
    throw DataError(fmt::format("checkpoint '{}' is truncated: {} has {} parameters ({} bytes), the data section "
                                "holds {} bytes",
                                name, model.name(), model.param_count(), model.param_count() * sizeof(float),
                                data_size));
  std::vector<float> params(model.param_count());
  for (const ParamTensor& p : model.shape().params) {
    const std::string& tname = p.name;
    auto it = header.find(tname);
    if (it == header.end()) throw DataError(fmt::format("checkpoint '{}' has no tensor '{}'", name, tname));
    if (!it->is_object())
      throw DataError(fmt::format("checkpoint '{}' is corrupt: the entry of tensor '{}' is not an object", name, tname));
    const json& t = *it;
    auto dtype = t.find("dtype");
    if (dtype == t.end() || !dtype->is_string() || dtype->get<std::string>() != "F32")
      throw DataError(fmt::format("checkpoint '{}': tensor '{}' has dtype {}, expected F32", name, tname,
                                  dtype == t.end() ? std::string("(none)") : describe(*dtype)));
    auto shape = t.find("shape");
    if (shape == t.end() || *shape != shape_json(p))
      throw DataError(fmt::format("checkpoint '{}': tensor '{}' has shape {}, expected {}", name, tname,
                                  shape == t.end() ? std::string("(none)") : describe(*shape), shape_json(p).dump()));
    auto offsets = t.find("data_offsets");
    if (offsets == t.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
        !(*offsets)[1].is_number_unsigned())
      throw DataError(fmt::format("checkpoint '{}': tensor '{}' has no valid data_offsets", name, tname));
    const auto begin = (*offsets)[0].get<uint64_t>(), end = (*offsets)[1].get<uint64_t>();
    if (begin > end || end > data_size || end - begin != p.size * sizeof(float))
      throw DataError(fmt::format("checkpoint '{}' is corrupt or truncated: tensor '{}' data_offsets [{}, {}] "
                                  "do not hold {} bytes within its {}-byte data section",
                                  name, tname, begin, end, p.size * sizeof(float), data_size));
    if (!read(8 + header_len + begin, params.data() + p.offset, end - begin))
      throw DataError(fmt::format("checkpoint '{}' is unreadable: short read in tensor '{}'", name, tname));
  }
  return {model, std::move(params)};
}

}  // namespace

void save_checkpoint(const std::filesystem::path& file, const ModelSpec& model, std::span<const float> params,
                     std::map<std::string, std::string> metadata) {
  MB_CHECK(params.size() == model.param_count(), Error,
           "cannot save checkpoint '{}': {} parameters given, the model ({}) has {}", file.string(), params.size(),
           model.name(), model.param_count());
  json header = json::object();
  for (const ParamTensor& p : model.shape().params) {
    const uint64_t begin = p.offset * sizeof(float), end = (p.offset + p.size) * sizeof(float);
    header[p.name] = json{{"dtype", "F32"}, {"shape", shape_json(p)}, {"data_offsets", {begin, end}}};
  }
  metadata["model"] = model_text(model);
  header["__metadata__"] = metadata;

  std::string text = header.dump();
  // The format recommends 8-byte alignment of the data section; spaces are valid JSON padding.
  text.append((8 - text.size() % 8) % 8, ' ');

  std::string bytes(8 + text.size() + params.size_bytes(), '\0');
  put_u64_le(bytes.data(), text.size());
  std::memcpy(bytes.data() + 8, text.data(), text.size());
  std::memcpy(bytes.data() + 8 + text.size(), params.data(), params.size_bytes());
  write_file_atomic(file, bytes);
}

Checkpoint load_checkpoint(const std::filesystem::path& file) {
  const std::string name = file.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw DataError(fmt::format("checkpoint '{}' is missing or not a file", name));
  const uint64_t size = std::filesystem::file_size(file, ec);
  if (ec) throw DataError(fmt::format("checkpoint '{}' is unreadable: {}", name, ec.message()));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw DataError(fmt::format("checkpoint '{}' is unreadable", name));
  // Only the header and the model's tensors are read: extra tensors cost nothing.
  auto read = [&](uint64_t offset, void* dst, std::size_t n) {
    in.seekg(static_cast<std::streamoff>(offset));
    return static_cast<bool>(in.read(static_cast<char*>(dst), static_cast<std::streamsize>(n)));
  };
  return parse_checkpoint(size, read, name);
}

Checkpoint load_checkpoint_bytes(std::string_view bytes, const std::string& name) {
  auto read = [&](uint64_t offset, void* dst, std::size_t n) {
    if (offset > bytes.size() || n > bytes.size() - offset) return false;
    std::memcpy(dst, bytes.data() + offset, n);
    return true;
  };
  return parse_checkpoint(bytes.size(), read, name);
}

}  // namespace mb
