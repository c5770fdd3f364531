// Run records as JSON (format_version 1, schema_version below) and CSV. Reading validates every field, so a
// corrupt history file raises a DataError the GUI can report and skip.
#include "records/run_record.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <system_error>

#include <nlohmann/json.hpp>

#include "config/train_options.h"
#include "model/model_spec.h"
#include "model/model_text.h"
#include "records/engine_report_json.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace mb {
namespace {

using nlohmann::json;

constexpr int kFormatVersion = 1;
// A record is ~250 bytes per epoch; 100,000 epochs (the CLI's maximum) make ~25 MB.
constexpr std::uintmax_t kMaxRunRecordBytes = 64u << 20;

// ---- JSON field access with errors that name the field --------------------------------

const json& field(const json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) throw DataError(fmt::format("field '{}{}' is missing", where, key));
  return *it;
}

[[noreturn]] void wrong_type(const char* key, const std::string& where, const json& v, const char* want) {
  throw DataError(fmt::format("field '{}{}' is {}, expected {}", where, key, v.type_name(), want));
}

std::string get_string(const json& obj, const char* key, const std::string& where) {
  const json& v = field(obj, key, where);
  if (!v.is_string()) wrong_type(key, where, v, "a string");
  return v.get<std::string>();
}

bool get_bool(const json& obj, const char* key, const std::string& where) {
  const json& v = field(obj, key, where);
  if (!v.is_boolean()) wrong_type(key, where, v, "a boolean");
  return v.get<bool>();
}

int64_t get_int64(const json& obj, const char* key, const std::string& where, int64_t lo, int64_t hi) {
  const json& v = field(obj, key, where);
  if (!v.is_number_integer()) wrong_type(key, where, v, "an integer");
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
    throw DataError(fmt::format("field '{}{}' is out of range", where, key));
  const auto x = v.get<int64_t>();
  if (x < lo || x > hi)
    throw DataError(fmt::format("field '{}{}' is {}, outside {}..{}", where, key, x, lo, hi));
  return x;
}

int get_int(const json& obj, const char* key, const std::string& where, int lo = std::numeric_limits<int>::min()) {
  return static_cast<int>(get_int64(obj, key, where, lo, std::numeric_limits<int>::max()));
}

uint64_t get_uint64(const json& obj, const char* key, const std::string& where) {
  const json& v = field(obj, key, where);
  if (!v.is_number_integer()) wrong_type(key, where, v, "an unsigned integer");
  if (!v.is_number_unsigned() && v.get<int64_t>() < 0)
    throw DataError(fmt::format("field '{}{}' is negative, expected an unsigned integer", where, key));
  return v.get<uint64_t>();
}

// nlohmann writes NaN and infinities as null (JSON has no spelling for them); a diverged
// run's loss is NaN, so null reads back as NaN rather than failing the whole record.
double get_double(const json& obj, const char* key, const std::string& where) {
  const json& v = field(obj, key, where);
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!v.is_number()) wrong_type(key, where, v, "a number");
  return v.get<double>();
}

bool has(const json& obj, const char* key) { return obj.find(key) != obj.end(); }

std::vector<std::string> get_strings(const json& obj, const char* key, const std::string& where) {
  const json& v = field(obj, key, where);
  if (!v.is_array()) wrong_type(key, where, v, "an array of strings");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string())
      throw DataError(fmt::format("field '{}{}[{}]' is {}, expected a string", where, key, i, v[i].type_name()));
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

// {"forward_s": ..., "backward_s": ..., ...}: every time category of the table by its key.
std::string seconds_key(const TimeCategory& c) { return std::string(c.key) + "_s"; }

json phases_to_json(const PhaseTimes& t) {
  json j = json::object();
  const auto categories = time_categories();
  for (std::size_t i = 0; i < categories.size(); ++i) j[seconds_key(categories[i])] = t[int(i)];
  return j;
}

// A category the record's schema predates may be missing (it was not measured: 0).
PhaseTimes phases_from_json(const json& j, const std::string& where, int schema) {
  if (!j.is_object()) throw DataError(fmt::format("field '{}' is {}, expected an object", where, j.type_name()));
  const std::string w = where + ".";
  PhaseTimes t;
  const auto categories = time_categories();
  for (std::size_t i = 0; i < categories.size(); ++i) {
    const std::string key = seconds_key(categories[i]);
    if (categories[i].since_schema > schema && !has(j, key.c_str())) continue;
    t[int(i)] = get_double(j, key.c_str(), w);
  }
  return t;
}

// ---- the configuration's fields, described once for writing and reading -------------------

// Schema 1: the first records (tests/data/run_record_v1.json); 2: processes, hosts, the
// straggler, the teaching pace and the precision (written without a schema number); 3: the
// schema number itself and time_phases; 4: balanced shares (balance, shares_from and the
// share changes with the step each took effect) and the simulated link (link_gbit,
// link_latency_us; the model field names what-if models too, "cnn-dense4096"); 5: the
// scenario as one object of its fields' texts by option key ("scenario": {"slow_replica":
// "1:3", ...}, written by the option table's rows, so a new field needs no code here) in place
// of schema 2-4's slow_replica, slow_factor, link_gbit, link_latency_us, balance and
// shares_from, which are still read from older records; each replica's time categories as the
// table in util/phase_times.h lists them (compute_cpu_s is new); and the device engine's step
// counts (engine.graph_steps, engine.eager_steps: how many of the run's steps replayed a CUDA
// graph and how many ran eagerly); the engines' options ("engine_options", the option table's
// rows again) and, for CPU runs, the kernels that ran ("kernels"). A field a record's schema
// predates may be missing and then keeps its default; later issues add fields with the next
// number. 6: the model as its canonical layer text (model/model_text.h; older records' names
// "cnn-reference" and "cnn-denseN" still read) and, for programs, its layer list ("layers":
// the input shape, each layer's Keras class, settings, output shape and parameters). 7: the
// time category hidden_allreduce_s (--bucket-mb: the exchange that ran under the backward pass).
// 8: the time category input_wait_s (waiting for the input pipeline) and the scenario's input
// fields (input_latency, input_cpu, loaders, prefetch: in the scenario object, by the table).
constexpr int kSchemaVersion = 8;

struct ConfigField {
  std::string_view key;
  int since;   // the schema that added it
  std::function<json(const RunConfig&)> write;
  std::function<void(RunConfig&, const json& obj, const std::string& where)> read;
};

template <class T>
ConfigField plain(std::string_view key, int since, T RunConfig::*member) {
  return {key, since, [member](const RunConfig& c) { return json(c.*member); },
          [key, member](RunConfig& c, const json& j, const std::string& w) {
            const char* k = key.data();
            if constexpr (std::is_same_v<T, std::string>) c.*member = get_string(j, k, w);
            else if constexpr (std::is_same_v<T, bool>) c.*member = get_bool(j, k, w);
            else if constexpr (std::is_same_v<T, double>) c.*member = get_double(j, k, w);
            else if constexpr (std::is_same_v<T, uint64_t>) c.*member = get_uint64(j, k, w);
            else c.*member = get_strings(j, k, w);
          }};
}

template <class T>
ConfigField integer(std::string_view key, int since, T RunConfig::*member, int64_t lo) {
  return {key, since, [member](const RunConfig& c) { return json(c.*member); },
          [key, member, lo](RunConfig& c, const json& j, const std::string& w) {
            constexpr int64_t hi = std::numeric_limits<T>::max();
            c.*member = static_cast<T>(get_int64(j, key.data(), w, lo, hi));
          }};
}

// A word the code holds as an enum or a parsed list: written as text, read back through the
// same parser, a word it does not know naming the field.
template <class T>
ConfigField word(std::string_view key, int since, T RunConfig::*member, std::string (*write)(const T&),
                 std::optional<T> (*read)(std::string_view), std::string_view expected) {
  return {key, since, [member, write](const RunConfig& c) { return json(write(c.*member)); },
          [key, member, read, expected](RunConfig& c, const json& j, const std::string& w) {
            const std::string text = get_string(j, key.data(), w);
            const std::optional<T> v = read(text);
            if (!v) throw DataError(fmt::format("field '{}{}' is '{}', expected {}", w, key, text, expected));
            c.*member = *v;
          }};
}

// The model: its canonical text (model/model_text.h), read back at this edge; schema 6 also
// writes the layer list for programs (input shape, and each layer's Keras class and settings),
// which reading leaves to the text.
ConfigField model_field() {
  return {"model", 1, [](const RunConfig& c) { return json(model_text(c.model)); },
          [](RunConfig& c, const json& j, const std::string& w) {
            const std::string text = get_string(j, "model", w);
            try {
              c.model = model_from_text(text);
            } catch (const ConfigError& e) {
              throw DataError(fmt::format("field '{}model' is '{}', not a model this version can train: {}", w, text,
                                          e.what()));
            }
          }};
}

json layer_json(const LayerShape& l) {
  json j = {{"name", l.name}, {"class", keras_class(l.layer.kind)},
            {"output_shape", l.flat_out ? json::array({l.out.size()}) : json::array({l.out.h, l.out.w, l.out.c})},
            {"params", l.param_count}};
  switch (l.layer.kind) {
    case LayerKind::Conv2D: j["filters"] = l.layer.units; j["kernel_size"] = l.layer.kernel; break;
    case LayerKind::Dense: j["units"] = l.layer.units; break;
    case LayerKind::Dropout: j["rate"] = l.layer.rate; break;
    default: break;
  }
  if (l.layer.kind == LayerKind::Conv2D || l.layer.kind == LayerKind::MaxPool || l.layer.kind == LayerKind::AvgPool)
    j["padding"] = l.layer.padding == Padding::Same ? "same" : "valid";
  if (l.layer.has_params()) {
    j["activation"] = l.layer.activation == Activation::Relu ? "relu" : "linear";
    j["use_bias"] = l.layer.bias;
  }
  return j;
}

ConfigField layers_field() {
  return {"layers", 6,
          [](const RunConfig& c) {
            const ModelShape& m = c.model.shape();
            json layers = json::array();
            for (const LayerShape& l : m.layers) layers.push_back(layer_json(l));
            return json{{"input_shape", {m.input.h, m.input.w, m.input.c}}, {"layers", layers},
                        {"params", m.param_count}};
          },
          [](RunConfig&, const json&, const std::string&) {}};
}

std::string devices_word(const DeviceList& d) { return format_devices(d); }
std::optional<DeviceList> devices_from_word(std::string_view text) {
  try {
    return parse_devices(text);
  } catch (const ConfigError&) {
    return std::nullopt;
  }
}
std::string backend_word(const Backend& b) { return std::string(to_string(b)); }
std::optional<Backend> backend_from_word(std::string_view text) { return parse_backend(text); }
std::string precision_word(const Precision& p) { return std::string(to_string(p)); }
std::optional<Precision> precision_from_word(std::string_view text) { return parse_precision(text); }

// [{"step": 0, "shares": [64, 64]}, ...]: steps ascending from 0, shares positive.
ConfigField share_changes_field(int since) {
  return {"share_changes", since,
          [](const RunConfig& c) {
            json a = json::array();
            for (const ShareChange& x : c.share_changes) a.push_back(json{{"step", x.step}, {"shares", x.shares}});
            return a;
          },
          [](RunConfig& c, const json& j, const std::string& w) {
            const json& a = field(j, "share_changes", w);
            if (!a.is_array()) wrong_type("share_changes", w, a, "an array");
            c.share_changes.clear();
            for (std::size_t i = 0; i < a.size(); ++i) {
              const std::string at = fmt::format("{}share_changes[{}].", w, i);
              if (!a[i].is_object())
                throw DataError(fmt::format("field '{}share_changes[{}]' is {}, expected an object", w, i,
                                            a[i].type_name()));
              ShareChange x;
              const int64_t first = c.share_changes.empty() ? 0 : c.share_changes.back().step + 1;
              x.step = get_int64(a[i], "step", at, first, c.share_changes.empty() ? 0 : std::numeric_limits<int64_t>::max());
              const json& shares = field(a[i], "shares", at);
              if (!shares.is_array() || shares.empty()) wrong_type("shares", at, shares, "an array of shares");
              for (std::size_t r = 0; r < shares.size(); ++r) {
                const json one = json{{"share", shares[r]}};
                x.shares.push_back(get_int64(one, "share", fmt::format("{}shares[{}].", at, r), 0,
                                             std::numeric_limits<int64_t>::max()));
              }
              c.share_changes.push_back(std::move(x));
            }
          }};
}

// A group of options kept as one object of their texts by option key, each written and read by
// its row of the option table (schema 5: "scenario": {"slow_replica": "1:3", ...} and
// "engine_options": {"cpu_conv2": "own", ...}); a key this version does not know is refused
// (it would change what the run means), a key missing keeps its default (added later).
template <typename Group>
ConfigField group_field(std::string_view key, int since, Group RunConfig::*member,
                        std::vector<std::pair<std::string, std::string>> (*texts)(const Group&),
                        void (*set_text)(Group&, std::string_view, std::string_view)) {
  return {key, since,
          [member, texts](const RunConfig& c) {
            json j = json::object();
            for (const auto& [name, text] : texts(c.*member)) j[name] = text;
            return j;
          },
          [key, member, set_text](RunConfig& c, const json& j, const std::string& w) {
            const json& obj = field(j, key.data(), w);
            if (!obj.is_object()) wrong_type(key.data(), w, obj, "an object");
            c.*member = Group{};
            for (const auto& [name, value] : obj.items()) {
              if (!value.is_string())
                throw DataError(fmt::format("field '{}{}.{}' is {}, expected a string", w, key, name, value.type_name()));
              try {
                set_text(c.*member, name, value.template get<std::string>());
              } catch (const ConfigError& e) {
                throw DataError(fmt::format("field '{}{}.{}': {}", w, key, name, e.what()));
              }
            }
          }};
}

// Schemas 2-4 kept the scenario's fields one by one beside the others.
void read_legacy_scenario(RunConfig& c, const json& j, const std::string& w, int schema) {
  Scenario& s = c.scenario;
  if (schema >= 2 || has(j, "slow_replica")) {
    s.straggler.replica = static_cast<int>(get_int64(j, "slow_replica", w, -1, std::numeric_limits<int>::max()));
    s.straggler.factor = get_double(j, "slow_factor", w);
    if (!s.straggler.on()) s.straggler.factor = 1.0;
  }
  if (schema >= 4 || has(j, "link_gbit")) {
    s.link.gbit = get_double(j, "link_gbit", w);
    s.link.latency_us = get_double(j, "link_latency_us", w);
  }
  if (schema >= 4 || has(j, "balance")) {
    s.balance = get_bool(j, "balance", w);
    s.shares_from = get_string(j, "shares_from", w);
  }
}

const std::vector<ConfigField>& config_fields() {
  constexpr int64_t kNoLimit = 0;
  static const std::vector<ConfigField> fields = {
      model_field(),
      layers_field(),
      word("devices", 1, &RunConfig::devices, devices_word, devices_from_word, "a device list (cpu:N, cuda:I,...)"),
      integer("replicas", 1, &RunConfig::replicas, 1),
      integer("processes", 2, &RunConfig::processes, 1),
      integer("replicas_per_process", 2, &RunConfig::replicas_per_process, 1),
      plain("hosts", 2, &RunConfig::hosts),
      plain("simulated", 1, &RunConfig::simulated),
      group_field("scenario", 5, &RunConfig::scenario, scenario_texts, set_scenario_text),
      group_field("engine_options", 5, &RunConfig::engine, engine_option_texts, set_engine_option_text),
      plain("kernels", 5, &RunConfig::kernels),
      plain("step_delay_s", 2, &RunConfig::step_delay_s),
      plain("time_phases", 3, &RunConfig::time_phases),
      share_changes_field(4),
      integer("global_batch", 1, &RunConfig::global_batch, 1),
      integer("per_replica_batch", 1, &RunConfig::per_replica_batch, 1),
      plain("per_replica_batch_mode", 1, &RunConfig::per_replica_batch_mode),
      integer("epochs", 1, &RunConfig::epochs, kNoLimit),
      plain("base_learning_rate", 1, &RunConfig::base_learning_rate),
      plain("learning_rate", 1, &RunConfig::learning_rate),
      plain("scale_lr", 1, &RunConfig::scale_lr),
      plain("seed", 1, &RunConfig::seed),
      plain("dataset", 1, &RunConfig::dataset),
      plain("data_dir", 1, &RunConfig::data_dir),
      integer("train_size", 1, &RunConfig::train_size, kNoLimit),
      integer("val_size", 1, &RunConfig::val_size, kNoLimit),
      word("backend", 1, &RunConfig::backend, backend_word, backend_from_word, "reference, onednn or cuda"),
      word("precision", 2, &RunConfig::precision, precision_word, precision_from_word, "fp32 or tf32"),
      plain("communicator", 1, &RunConfig::communicator),
      plain("version", 1, &RunConfig::version),
      plain("cpu_model", 1, &RunConfig::cpu_model),
      plain("gpu_models", 1, &RunConfig::gpu_models),
      plain("start_time", 1, &RunConfig::start_time),
  };
  return fields;
}

json config_to_json(const RunConfig& c) {
  json j = json::object();
  for (const ConfigField& f : config_fields()) j[std::string(f.key)] = f.write(c);
  return j;
}

RunConfig config_from_json(const json& j, int schema) {
  const std::string w = "config.";
  if (!j.is_object()) throw DataError(fmt::format("field 'config' is {}, expected an object", j.type_name()));
  RunConfig c;
  bool has_replicas_per_process = false;
  for (const ConfigField& f : config_fields()) {
    // Written by a later schema than the record's: a record of before may lack it.
    if (f.since > schema && !has(j, f.key.data())) continue;
    f.read(c, j, w);
    has_replicas_per_process |= f.key == "replicas_per_process";
  }
  if (schema < 5 && !has(j, "scenario")) read_legacy_scenario(c, j, w, schema);
  if (!has_replicas_per_process) c.replicas_per_process = c.replicas;   // one process held them all
  return c;
}

// The plain real-valued fields of a record's parts, written and read by one loop each.
template <typename T>
struct RealField {
  const char* key;
  double T::*member;
};

template <typename T, std::size_t N>
void put_reals(json& j, const T& v, const RealField<T> (&fields)[N]) {
  for (const auto& f : fields) j[f.key] = v.*f.member;
}

template <typename T, std::size_t N>
void get_reals(const json& j, const std::string& where, T& v, const RealField<T> (&fields)[N]) {
  for (const auto& f : fields) v.*f.member = get_double(j, f.key, where);
}

constexpr RealField<CommProfile> kCommReals[] = {
    {"allreduce_s", &CommProfile::allreduce_s}, {"algbw_gbs", &CommProfile::algbw_gbs},
    {"busbw_gbs", &CommProfile::busbw_gbs},     {"step_s", &CommProfile::step_s},
    {"step_no_comm_s", &CommProfile::step_no_comm_s}, {"exposed_s", &CommProfile::exposed_s}};

constexpr RealField<EpochMetrics> kEpochReals[] = {
    {"time_s", &EpochMetrics::time_s},         {"allreduce_s", &EpochMetrics::allreduce_s},
    {"train_loss", &EpochMetrics::train_loss}, {"train_acc", &EpochMetrics::train_acc},
    {"val_loss", &EpochMetrics::val_loss},     {"val_acc", &EpochMetrics::val_acc},
    {"images_per_s", &EpochMetrics::images_per_s}};

json comm_to_json(const CommProfile& c) {
  json j{{"replicas", c.replicas}, {"bytes", c.bytes}, {"buckets", c.buckets}};
  put_reals(j, c, kCommReals);
  return j;
}

CommProfile comm_from_json(const json& j) {
  const std::string w = "comm.";
  if (!j.is_object()) throw DataError(fmt::format("field 'comm' is {}, expected an object", j.type_name()));
  CommProfile c;
  c.replicas = get_int(j, "replicas", w, 0);
  c.bytes = get_int64(j, "bytes", w, 0, std::numeric_limits<int64_t>::max());
  c.buckets = get_int(j, "buckets", w, 0);
  get_reals(j, w, c, kCommReals);
  return c;
}

json epoch_to_json(const EpochMetrics& e) {
  json replicas = json::array();
  for (const auto& t : e.replica_times) replicas.push_back(phases_to_json(t));
  json j{{"epoch", e.epoch}, {"replica_times", std::move(replicas)}, {"param_digest", e.param_digest}};
  put_reals(j, e, kEpochReals);
  return j;
}

EpochMetrics epoch_from_json(const json& j, std::size_t index, int schema) {
  const std::string w = fmt::format("epochs[{}].", index);
  if (!j.is_object())
    throw DataError(fmt::format("field 'epochs[{}]' is {}, expected an object", index, j.type_name()));
  EpochMetrics e;
  e.epoch = get_int(j, "epoch", w, 0);
  get_reals(j, w, e, kEpochReals);
  if (has(j, "replica_times")) {
    const json& r = j.at("replica_times");
    if (!r.is_array()) wrong_type("replica_times", w, r, "an array");
    for (std::size_t i = 0; i < r.size(); ++i)
      e.replica_times.push_back(phases_from_json(r[i], fmt::format("{}replica_times[{}]", w, i), schema));
  }
  if (has(j, "param_digest")) e.param_digest = get_string(j, "param_digest", w);
  return e;
}

// ---- CSV ------------------------------------------------------------------------------

// RFC 4180: quote a field holding a comma, quote or line break; double inner quotes.
std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out += '"';
    out += ch;
  }
  out += '"';
  return out;
}

// fmt's "{}" for doubles is the shortest text that parses back to the same bits.
std::string num(double x) { return fmt::format("{}", x); }
std::string num(int64_t x) { return fmt::format("{}", x); }
std::string num(uint64_t x) { return fmt::format("{}", x); }
std::string boolean(bool b) { return b ? "true" : "false"; }

constexpr const char* kCsvHeader =
    "run_id,run_name,status,devices,replicas,simulated,global_batch,per_replica_batch,"
    "per_replica_batch_mode,learning_rate,scale_lr,seed,dataset,backend,communicator,train_size,val_size,"
    "epoch,time_s,allreduce_s,train_loss,train_acc,val_loss,val_acc,images_per_s,"
    // Added after the first exports, at the end so the older columns keep their places: the
    // what-ifs a run may carry (a model of another width, a simulated link or straggler,
    // balanced shares), so an exported comparison says what it compared, as schema 4 knew
    // them; then "scenario": every scenario field that is on, as the option table writes it
    // ("slow_replica=1:3 simulated_link=1:50"), so a field added later needs no column of
    // its own.
    "model,simulated_link_gbit,simulated_link_latency_us,slow_replica,slow_factor,balance,scenario";

// The last columns: each time category's mean over the replicas of the epoch's seconds
// ("breakdown_forward_s"; empty for an epoch without a breakdown), so a new category is a new
// column with no code here.
std::string breakdown_header() {
  std::string out;
  for (const TimeCategory& c : time_categories()) out += fmt::format(",breakdown_{}_s", c.key);
  return out;
}

std::string breakdown_columns(const EpochMetrics& e) {
  std::string out;
  const std::size_t n = e.replica_times.size();
  for (std::size_t c = 0; c < time_categories().size(); ++c) {
    double sum = 0;
    for (const PhaseTimes& t : e.replica_times) sum += t[int(c)];
    out += ',';   // (appended apart: GCC 12 warns falsely about "," + std::string here)
    if (n > 0) out += num(sum / double(n));
  }
  return out;
}

// The scenario column: key=text of every field that differs from plain training.
std::string scenario_column(const Scenario& s) {
  const auto plain = scenario_texts(Scenario{});
  std::string out;
  for (const auto& [key, text] : scenario_texts(s)) {
    // Named captures: clang before 16 cannot capture structured bindings.
    const bool off = std::any_of(plain.begin(), plain.end(), [&key = key, &text = text](const auto& p) {
      return p.first == key && p.second == text;
    });
    if (!off) out += (out.empty() ? "" : " ") + key + "=" + text;
  }
  return out;
}

// "cpu:2" -> "cpu2", "cuda:0,cuda:1" -> "cuda0_1": short and safe in a file name.
std::string compact_devices(const std::string& devices) {
  std::string out, prev_kind;
  std::size_t start = 0;
  while (start <= devices.size()) {
    std::size_t end = devices.find(',', start);
    if (end == std::string::npos) end = devices.size();
    std::string token = devices.substr(start, end - start);
    start = end + 1;
    if (token.empty()) continue;
    const auto colon = token.find(':');
    std::string kind = token.substr(0, colon);
    std::string rest = colon == std::string::npos ? std::string() : token.substr(colon + 1);
    if (!out.empty()) out += '_';
    out += (kind == prev_kind ? std::string() : kind) + rest;
    prev_kind = kind;
  }
  std::string safe;
  for (char ch : out)
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_') safe += ch;
  if (safe.size() > 32) safe.resize(32);
  return safe.empty() ? std::string("run") : safe;
}

// "2026-11-30T06:32:21Z" -> "20261130T063221Z"; the current time when start_time is not that.
std::string compact_utc(const std::string& iso) {
  auto is_digit = [](char ch) { return ch >= '0' && ch <= '9'; };
  std::string digits;
  for (char ch : iso)
    if (ch != '-' && ch != ':') digits += ch;
  const bool ok = digits.size() == 16 && digits[8] == 'T' && digits[15] == 'Z' &&
                  std::all_of(digits.begin(), digits.begin() + 8, is_digit) &&
                  std::all_of(digits.begin() + 9, digits.begin() + 15, is_digit);
  if (ok) return digits;
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return std::string(buf, n);
}

}  // namespace

std::string_view to_string(RunStatus status) {
  switch (status) {
    case RunStatus::Completed: return "completed";
    case RunStatus::Stopped: return "stopped";
    case RunStatus::Failed: return "failed";
  }
  return "failed";   // not reached: every enumerator is handled above
}

std::optional<RunStatus> parse_run_status(std::string_view text) {
  for (RunStatus s : {RunStatus::Completed, RunStatus::Stopped, RunStatus::Failed})
    if (text == to_string(s)) return s;
  return std::nullopt;
}

double RunRecord::mean_epoch_time() const {
  if (epochs.empty()) return 0;
  double sum = 0;
  for (const auto& e : epochs) sum += e.time_s;
  return sum / static_cast<double>(epochs.size());
}

double RunRecord::best_val_acc() const {
  double best = 0;
  for (const auto& e : epochs) best = std::fmax(best, e.val_acc);   // fmax skips a NaN epoch
  return best;
}

std::string devices_label(const RunConfig& c) {
  return c.processes > 1 ? fmt::format("{} x {}", c.processes, c.devices_text()) : c.devices_text();
}

std::string make_run_id(const RunConfig& config) {
  // Two runs started in the same second on the same devices still differ in the suffix.
  uint32_t salt = 0;
  try {
    salt = std::random_device{}();
  } catch (const std::exception&) {
  }
  salt ^= static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  // "np2-cpu1": a run of 2 processes x cpu:1 is not a cpu:1 run.
  const std::string devices = (config.processes > 1 ? fmt::format("np{}-", config.processes) : std::string()) +
                              compact_devices(config.devices_text());
  return fmt::format("{}-{}-{:04x}", compact_utc(config.start_time), devices,
                     (salt ^ (salt >> 16)) & 0xFFFFu);
}

nlohmann::json to_json(const RunConfig& config) { return config_to_json(config); }
nlohmann::json to_json(const PhaseTimes& times) { return phases_to_json(times); }
PhaseTimes phase_times_from_json(const nlohmann::json& j) { return phases_from_json(j, "phases", kSchemaVersion); }
RunConfig run_config_from_json(const nlohmann::json& j) { return config_from_json(j, kSchemaVersion); }
nlohmann::json to_json(const EpochMetrics& epoch) { return epoch_to_json(epoch); }
EpochMetrics epoch_metrics_from_json(const nlohmann::json& j) { return epoch_from_json(j, 0, kSchemaVersion); }

nlohmann::json to_json(const RunRecord& r) {
  json epochs = json::array();
  for (const auto& e : r.epochs) epochs.push_back(epoch_to_json(e));
  json j{{"format_version", kFormatVersion},
         {"schema_version", kSchemaVersion},
         {"id", r.id},
         {"name", r.name},
         {"config", config_to_json(r.config)},
         {"epochs", std::move(epochs)},
         {"warmup_s", r.warmup_s},
         {"replicas_in_sync", r.replicas_in_sync},
         {"status", to_string(r.status)},
         {"error", r.error}};
  if (r.comm.measured()) j["comm"] = comm_to_json(r.comm);
  if (r.engine.reported()) j["engine"] = to_json(r.engine);
  return j;
}

RunRecord run_record_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw DataError(fmt::format("a run record must be a JSON object, not {}", j.type_name()));
  const std::string w;
  const int64_t version = get_int64(j, "format_version", w, 1, std::numeric_limits<int64_t>::max());
  if (version != kFormatVersion)
    throw DataError(fmt::format("field 'format_version' is {}; this mirrorbench reads version {}", version,
                                kFormatVersion));
  // Fields are added within format 1; the schema number says which a record must have.
  const int schema = has(j, "schema_version") ? get_int(j, "schema_version", w, 1) : 1;
  RunRecord r;
  r.id = get_string(j, "id", w);
  if (r.id.empty()) throw DataError("field 'id' is empty");
  r.name = get_string(j, "name", w);
  r.config = config_from_json(field(j, "config", w), schema);
  const json& epochs = field(j, "epochs", w);
  if (!epochs.is_array()) wrong_type("epochs", w, epochs, "an array");
  for (std::size_t i = 0; i < epochs.size(); ++i) r.epochs.push_back(epoch_from_json(epochs[i], i, schema));
  if (has(j, "warmup_s")) r.warmup_s = get_double(j, "warmup_s", w);
  if (has(j, "comm")) r.comm = comm_from_json(j.at("comm"));
  if (has(j, "engine")) r.engine = engine_report_from_json(j.at("engine"), schema >= 5);
  r.replicas_in_sync = get_bool(j, "replicas_in_sync", w);
  const std::string status = get_string(j, "status", w);
  const std::optional<RunStatus> parsed = parse_run_status(status);
  if (!parsed) throw DataError(fmt::format("field 'status' is '{}', expected completed, stopped or failed", status));
  r.status = *parsed;
  r.error = get_string(j, "error", w);
  return r;
}

void write_run_json(const RunRecord& record, const std::filesystem::path& file) {
  // Strings can carry bytes that are not UTF-8 (a data folder's name, an error message
  // quoting a file name); replace them instead of failing the whole record.
  write_file_atomic(file, to_json(record).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

RunRecord parse_run_record(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw DataError("the file is not valid JSON");
  return run_record_from_json(j);
}

RunRecord read_run_json(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw DataError(fmt::format("run record '{}' is missing or not a file", file.string()));
  // The history reads every file in its folder: a stray huge file must not be read whole.
  const auto size = std::filesystem::file_size(file, ec);
  if (!ec && size > kMaxRunRecordBytes)
    throw DataError(fmt::format("run record '{}' is {} bytes, more than the {} a run record can be", file.string(),
                                size, kMaxRunRecordBytes));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw DataError(fmt::format("run record '{}' is unreadable", file.string()));
  std::string text;
  text.resize(static_cast<std::size_t>(ec ? 0 : size));
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.gcount() != static_cast<std::streamsize>(text.size()))
    throw DataError(fmt::format("run record '{}' is unreadable: short read", file.string()));
  try {
    return parse_run_record(text);
  } catch (const DataError& e) {
    throw DataError(fmt::format("run record '{}': {}", file.string(), e.what()));
  }
}

std::string runs_to_csv(std::span<const RunRecord> runs) {
  std::string out = kCsvHeader;
  out += breakdown_header();
  out += '\n';
  for (const auto& r : runs) {
    const auto& c = r.config;
    const std::string run_cols = fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", csv_field(r.id), csv_field(r.name),
        csv_field(to_string(r.status)), csv_field(c.devices_text()), num(int64_t(c.replicas)), boolean(c.simulated),
        num(c.global_batch), num(c.per_replica_batch), boolean(c.per_replica_batch_mode), num(c.learning_rate),
        boolean(c.scale_lr), num(c.seed), csv_field(c.dataset), csv_field(to_string(c.backend)), csv_field(c.communicator),
        num(c.train_size), num(c.val_size));
    const Scenario& s = c.scenario;
    const std::string what_if_cols =
        fmt::format("{},{},{},{},{},{},{}", csv_field(model_text(c.model)), num(s.link.gbit), num(s.link.latency_us),
                    num(int64_t(s.straggler.replica)), num(s.straggler.on() ? s.straggler.factor : 1.0),
                    boolean(s.balanced()), csv_field(scenario_column(s)));
    for (const auto& e : r.epochs) {
      out += run_cols;
      out += fmt::format(",{},{},{},{},{},{},{},{},{}", num(int64_t(e.epoch)), num(e.time_s), num(e.allreduce_s),
                         num(e.train_loss), num(e.train_acc), num(e.val_loss), num(e.val_acc), num(e.images_per_s),
                         what_if_cols);
      out += breakdown_columns(e);
      out += '\n';
    }
  }
  return out;
}

void write_runs_csv(std::span<const RunRecord> runs, const std::filesystem::path& file) {
  write_file_atomic(file, runs_to_csv(runs));
}

}  // namespace mb
