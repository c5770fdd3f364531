// The training options' table and the generic code that reads, writes, checks, digests and
// resolves them (see train_options.h).
#include "model/model_text.h"
#include "config/train_options.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "config/option_text.h"
#include "keras/keras_model.h"
#include "util/digest.h"
#include "util/error.h"

namespace mb {
namespace {

constexpr int64_t kMaxI64 = std::numeric_limits<int64_t>::max();

// ---- the options' own syntaxes ----------------------------------------------------------------

std::string format_devices_option(const TrainConfig& c) { return format_devices(c.devices); }
void parse_devices_option(TrainConfig& c, std::string_view text) { c.devices = parse_devices(text); }

std::string format_backend(const TrainConfig& c) { return std::string(to_string(c.backend)); }
void parse_backend_option(TrainConfig& c, std::string_view text) {
  if (text == kAutoBackend) {
    c.backend = std::nullopt;
    return;
  }
  const std::optional<Backend> b = parse_backend(text);
  MB_CHECK(b.has_value(), ConfigError, "--backend: '{}' is not a backend (use auto, onednn, reference or cuda)", text);
  c.backend = b;
}

std::string format_precision(const TrainConfig& c) { return std::string(to_string(c.precision)); }
void parse_precision_option(TrainConfig& c, std::string_view text) {
  const std::optional<Precision> p = parse_precision(text);
  MB_CHECK(p.has_value(), ConfigError, "--precision: {} not in {{fp32,tf32}}", text);
  c.precision = *p;
}

std::string format_model(const TrainConfig& c) { return model_text(c.model); }
void parse_model(TrainConfig& c, std::string_view text) { c.model = model_from_source(text); }

// The simulated link: "GBIT[:US]" (bandwidth in Gbit/s, latency in microseconds), or "off".
}  // namespace

std::string simulated_link_text(const SimulatedLink& link) {
  if (link.gbit <= 0) return "off";
  return link.latency_us > 0 ? fmt::format("{}:{}", link.gbit, link.latency_us) : fmt::format("{}", link.gbit);
}

SimulatedLink simulated_link_from_text(std::string_view spec, std::string_view flag) {
  if (spec.empty() || spec == "off") return {};
  const auto colon = spec.find(':');
  SimulatedLink link;
  link.gbit = parse_real_option(flag, spec.substr(0, colon), 0, 1e5, true);
  if (colon != std::string_view::npos) link.latency_us = parse_real_option(flag, spec.substr(colon + 1), 0, 1e6, false);
  return link;
}

namespace {

// ---- the scenario's fields: their texts on the Scenario, and how they read to people ----------

bool flag_text(std::string_view flag, std::string_view text) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  throw ConfigError(fmt::format("{}: expects true or false, got '{}'", flag, text));
}

// The simulated straggler: "RANK:FACTOR", or "off".
std::string straggler_text(const Scenario& s) {
  return s.straggler.on() ? fmt::format("{}:{}", s.straggler.replica, s.straggler.factor) : std::string("off");
}
void parse_straggler(Scenario& s, std::string_view spec) {
  if (spec.empty() || spec == "off") {
    s.straggler = {};
    return;
  }
  const auto colon = spec.find(':');
  MB_CHECK(colon != std::string_view::npos, ConfigError,
           "--slow-replica expects RANK:FACTOR (e.g. 1:2 makes replica 1 twice as slow), got '{}'", spec);
  const std::string_view rank = spec.substr(0, colon), factor = spec.substr(colon + 1);
  int r = -1;
  const auto [rank_end, rank_ec] = std::from_chars(rank.data(), rank.data() + rank.size(), r);
  MB_CHECK(rank_ec == std::errc() && rank_end == rank.data() + rank.size() && r >= 0, ConfigError,
           "--slow-replica: '{}' is not a replica number", rank);
  double f = 0;
  const auto [factor_end, factor_ec] = std::from_chars(factor.data(), factor.data() + factor.size(), f);
  MB_CHECK(!factor.empty() && factor_ec == std::errc() && factor_end == factor.data() + factor.size() &&
               std::isfinite(f) && f >= 1 && f <= 100,
           ConfigError, "--slow-replica: the factor must be a number in 1..100, got '{}'", factor);
  s.straggler = {r, f};
}
std::string straggler_tag(const Scenario& s) {
  return s.straggler.on() ? fmt::format("simulated straggler r{} \u00d7{:g}", s.straggler.replica, s.straggler.factor)
                          : std::string();
}
std::string straggler_sentence(const Scenario& s) {
  return s.straggler.on() ? fmt::format("simulated straggler: replica {} computes {:g}\u00d7 slower",
                                        s.straggler.replica, s.straggler.factor)
                          : std::string();
}

std::string link_text(const Scenario& s) { return simulated_link_text(s.link); }
void parse_link(Scenario& s, std::string_view spec) { s.link = simulated_link_from_text(spec); }
std::string link_tag(const Scenario& s) {
  return s.link.on() ? fmt::format("simulated link {:g} Gbit/s", s.link.gbit) : std::string();
}
std::string link_sentence(const Scenario& s) {
  if (!s.link.on()) return {};
  return fmt::format("simulated link: every all-reduce lasts at least a ring's over {:g} Gbit/s links{}", s.link.gbit,
                     s.link.latency_us > 0 ? fmt::format(" with {:g} us per hop", s.link.latency_us) : std::string());
}

std::string balance_text(const Scenario& s) { return s.balance ? "true" : "false"; }
void parse_balance(Scenario& s, std::string_view text) { s.balance = flag_text("--balance", text); }
std::string balance_tag(const Scenario& s) { return s.balance ? "balanced shares" : ""; }
std::string balance_sentence(const Scenario& s) {
  return s.balance ? "balanced shares: each replica's share of the global batch follows its measured speed" : "";
}

std::string replay_text(const Scenario& s) { return s.shares_from; }
void parse_replay(Scenario& s, std::string_view text) { s.shares_from = std::string(text); }
std::string replay_tag(const Scenario& s) { return s.shares_from.empty() ? "" : "replayed shares"; }
std::string replay_sentence(const Scenario& s) {
  return s.shares_from.empty() ? "" : fmt::format("balanced shares replayed from {}", s.shares_from);
}

std::string accumulate_text(const Scenario& s) { return std::to_string(s.accumulate); }
void parse_accumulate(Scenario& s, std::string_view text) {
  s.accumulate = int(parse_integer_option("--accumulate", text, 1, kMaxAccumulate));
}
std::string accumulate_tag(const Scenario& s) {
  return s.accumulate > 1 ? fmt::format("accumulate \u00d7{}", s.accumulate) : std::string();
}
std::string accumulate_sentence(const Scenario& s) {
  return s.accumulate > 1 ? fmt::format("gradient accumulation: one all-reduce and one optimizer step every {} "
                                        "micro-batches (an effective batch {} times the global batch)",
                                        s.accumulate, s.accumulate)
                          : std::string();
}

std::string warmup_text(const Scenario& s) { return fmt::format("{:g}", s.lr_warmup_epochs); }
void parse_warmup(Scenario& s, std::string_view text) {
  s.lr_warmup_epochs = parse_real_option("--lr-warmup", text, 0, 1000, false);
}
std::string warmup_tag(const Scenario& s) {
  return s.lr_warmup_epochs > 0 ? fmt::format("lr warm-up {:g} epochs", s.lr_warmup_epochs) : std::string();
}
std::string warmup_sentence(const Scenario& s) {
  return s.lr_warmup_epochs > 0 ? fmt::format("learning-rate warm-up: the rate grows linearly to the run's over the "
                                              "first {:g} epochs (Goyal et al. 2017)",
                                              s.lr_warmup_epochs)
                                : std::string();
}

std::string wire_text(const Scenario& s) { return std::string(wire_name(s.allreduce_dtype)); }
void parse_wire(Scenario& s, std::string_view text) {
  for (WireDtype w : {WireDtype::Fp32, WireDtype::Bf16, WireDtype::Fp16})
    if (text == wire_name(w)) {
      s.allreduce_dtype = w;
      return;
    }
  throw ConfigError(fmt::format("--allreduce-dtype: '{}' is not one of fp32, bf16, fp16", text));
}
std::string wire_tag(const Scenario& s) {
  return s.allreduce_dtype == WireDtype::Fp32 ? std::string() : fmt::format("{} all-reduce", wire_name(s.allreduce_dtype));
}
std::string wire_sentence(const Scenario& s) {
  switch (s.allreduce_dtype) {
    case WireDtype::Fp32: return {};
    case WireDtype::Bf16:
      return "compressed all-reduce: the gradients travel as bf16 (half the bytes), summed in FP32 in rank order";
    case WireDtype::Fp16:
      return "compressed all-reduce: the gradients travel as fp16 (half the bytes), pre-scaled by a power of two so "
             "that small ones do not underflow, summed in FP32 in rank order";
  }
  return {};
}

std::string powersgd_text(const Scenario& s) { return std::to_string(s.powersgd_rank); }
void parse_powersgd(Scenario& s, std::string_view text) {
  s.powersgd_rank = int(parse_integer_option("--powersgd", text, 0, kMaxPowerSgdRank));
}
std::string powersgd_tag(const Scenario& s) {
  return s.powersgd_rank > 0 ? fmt::format("PowerSGD rank {}", s.powersgd_rank) : std::string();
}
std::string powersgd_sentence(const Scenario& s) {
  return s.powersgd_rank > 0 ? fmt::format("PowerSGD: each weight matrix travels as two rank-{} factors, with error "
                                           "feedback; biases and small tensors as they are (Vogels et al. 2019)",
                                           s.powersgd_rank)
                             : std::string();
}

std::string bucket_text(const Scenario& s) { return fmt::format("{:g}", s.bucket_mb); }
void parse_bucket(Scenario& s, std::string_view text) {
  s.bucket_mb = parse_real_option("--bucket-mb", text, 0, kMaxBucketMb, false);
}
std::string bucket_tag(const Scenario& s) {
  return s.bucket_mb > 0 ? fmt::format("buckets of {:g} MB", s.bucket_mb) : std::string();
}
std::string bucket_sentence(const Scenario& s) {
  return s.bucket_mb > 0 ? fmt::format("overlap: the all-reduce starts bucket by bucket ({:g} MB each) while the "
                                       "backward pass still runs; a simulated link's wire time hides under it",
                                       s.bucket_mb)
                         : std::string();
}

// ---- the input pipeline (trainer/input_pipeline.h) ----------------------------------------------

std::string latency_text(const Scenario& s) { return fmt::format("{:g}", s.input.latency_ms); }
void parse_latency(Scenario& s, std::string_view text) {
  s.input.latency_ms = parse_real_option("--input-latency", text, 0, kMaxInputCostMs, false);
}
std::string latency_tag(const Scenario& s) {
  return s.input.latency_ms > 0 ? fmt::format("simulated input latency {:g} ms", s.input.latency_ms) : std::string();
}
std::string latency_sentence(const Scenario& s) {
  return s.input.latency_ms > 0
             ? fmt::format("simulated input latency: loading each image waits {:g} ms, as a slow disk or a network "
                           "file system would make it; more loaders overlap the waits",
                           s.input.latency_ms)
             : std::string();
}
std::string input_cpu_text(const Scenario& s) { return fmt::format("{:g}", s.input.cpu_ms); }
void parse_input_cpu(Scenario& s, std::string_view text) {
  s.input.cpu_ms = parse_real_option("--input-cpu", text, 0, kMaxInputCostMs, false);
}
std::string input_cpu_tag(const Scenario& s) {
  return s.input.cpu_ms > 0 ? fmt::format("simulated input CPU {:g} ms", s.input.cpu_ms) : std::string();
}
std::string input_cpu_sentence(const Scenario& s) {
  return s.input.cpu_ms > 0
             ? fmt::format("simulated input CPU cost: preparing each image computes for {:g} ms, as decoding and "
                           "augmenting would; on CPU replicas the loaders take the replicas' own cores",
                           s.input.cpu_ms)
             : std::string();
}
// 0 loaders: the cores this process's replicas leave, shared among them, at least 1 each (on
// CPU replicas every replica takes a core; GPU replicas leave them all but their host threads).
int resolve_loaders(int requested, const RunShape& s) {
  if (requested > 0) return requested;
  const int cores = std::max(1, int(std::thread::hardware_concurrency()));
  const int here = std::max(1, s.replicas / std::max(1, s.processes));
  return std::max(1, (cores - here) / here);
}
std::string loaders_text(const Scenario& s) { return std::to_string(s.input.loaders); }
void parse_loaders(Scenario& s, std::string_view text) {
  s.input.loaders = int(parse_integer_option("--loaders", text, 0, kMaxLoaders));
}
// The loaders and the prefetch depth are the pipeline's settings, shown with its costs only.
std::string loaders_tag(const Scenario& s) {
  return s.input.costs() ? fmt::format("{} loader{}", s.input.loaders, s.input.loaders == 1 ? "" : "s") : std::string();
}
std::string loaders_sentence(const Scenario& s) {
  return s.input.costs() ? fmt::format("input pipeline: {} loader thread{} per replica, each up to {} step{} ahead",
                                       s.input.loaders, s.input.loaders == 1 ? "" : "s", s.input.prefetch,
                                       s.input.prefetch == 1 ? "" : "s")
                         : std::string();
}
std::string prefetch_text(const Scenario& s) { return std::to_string(s.input.prefetch); }
void parse_prefetch(Scenario& s, std::string_view text) {
  s.input.prefetch = int(parse_integer_option("--prefetch", text, 1, kMaxPrefetch));
}
std::string prefetch_tag(const Scenario& s) {
  return s.input.costs() ? fmt::format("prefetch {}", s.input.prefetch) : std::string();
}
std::string no_words(const Scenario&) { return {}; }   // said by the loaders' row

// ---- the engines' options: their texts on EngineOptions ----------------------------------------

std::string conv2_text(const EngineOptions& o) { return to_string(o.cpu_conv2); }
void parse_conv2(EngineOptions& o, std::string_view text) {
  for (Conv2Kernel k : {Conv2Kernel::Own, Conv2Kernel::Onednn, Conv2Kernel::OnednnDirect})
    if (text == to_string(k)) {
      o.cpu_conv2 = k;
      return;
    }
  throw ConfigError(fmt::format("--cpu-conv2: '{}' is not one of own, onednn, onednn-direct", text));
}

// An instruction set's name, or "auto" (stored as empty); the engine that applies it says
// whether this machine and process can take it.
std::string name_or_auto(const std::string& name) { return name.empty() ? "auto" : name; }
std::string checked_name(std::string_view flag, std::string_view text) {
  MB_CHECK(!text.empty() && text.size() <= 32 &&
               std::all_of(text.begin(), text.end(), [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; }),
           ConfigError, "{}: '{}' is not an instruction set's name (or auto)", flag, text);
  std::string lower(text);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return lower == "auto" ? std::string() : lower;
}
std::string onednn_isa_text(const EngineOptions& o) { return name_or_auto(o.onednn_isa); }
void parse_onednn_isa(EngineOptions& o, std::string_view text) { o.onednn_isa = checked_name("--onednn-isa", text); }
std::string simd_text(const EngineOptions& o) { return name_or_auto(o.simd_target); }
void parse_simd(EngineOptions& o, std::string_view text) {
  o.simd_target = checked_name("--simd-target", text);
  if (o.simd_target == "avx512") o.simd_target = "avx3";   // Highway's name for it
}

std::string cuda_path_text(const EngineOptions& o) { return to_string(o.cuda_path); }
void parse_cuda_path(EngineOptions& o, std::string_view text) {
  if (text == "cudnn") o.cuda_path = CudaPath::Cudnn;
  else if (text == "fused") o.cuda_path = CudaPath::Fused;
  else throw ConfigError(fmt::format("--cuda-path: '{}' is not cudnn or fused", text));
}
std::string tune_text(const EngineOptions& o) { return fmt::format("{}", o.cudnn_tune_s); }
void parse_tune(EngineOptions& o, std::string_view text) { o.cudnn_tune_s = parse_real_option("--cudnn-tune", text, 0, 600, false); }
std::string graphs_text(const EngineOptions& o) { return o.cuda_graphs ? "true" : "false"; }
void parse_graphs(EngineOptions& o, std::string_view text) { o.cuda_graphs = flag_text("--no-cuda-graphs", text); }
std::string fault_text(const EngineOptions& o) { return to_string(o.fault); }
void parse_fault(EngineOptions& o, std::string_view text) { o.fault = parse_fault_plan(text); }

// ---- what the options resolve to in the record, and back ------------------------------------

const TrainOption kOptions[] = {
    {.key = "data_dir", .flag = "--data", .value_name = "DIR",
     .help = "IDX folder in the MNIST layout (default: $MIRRORBENCH_DATA or Fashion-MNIST), a NumPy .npz or folder "
             "of x_train.npy, y_train.npy, x_test.npy, y_test.npy (as keras.datasets keeps them; uint8 images), a "
             "folder of CIFAR-10 binary batches, a folder of PNG/JPEG images in train/<class>/ and test/<class>/ "
             "sub-folders (as Keras's image_dataset_from_directory reads them), or synthetic:HxWxC[:CLASSES] (seeded "
             "images of any shape, "
             "60,000 + 10,000, to time any model)",
     .kind = OptionKind::Text, .member = &TrainConfig::data_dir,
     // Not agreed: each machine may keep the files elsewhere (their digests are compared).
     .remembered = true, .record_keys = "dataset,data_dir", .example = "/tmp/mirrorbench-example-data",
     .resolve = [](const TrainConfig&, const RunShape& s, RunConfig& r) { r.dataset = s.dataset, r.data_dir = s.data_dir; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.data_dir = r.data_dir; }},
    {.key = "devices", .flag = "--devices", .value_name = "LIST",
     .help = "cpu:N (N CPU replicas, one core each) or cuda:0,cuda:1",
     .kind = OptionKind::Custom, .agree = true, .remembered = true,
     // The replica count also sets the largest share, and the global batch and the learning
     // rate in their per-replica and scaled modes.
     .record_keys = "devices,replicas_per_process,simulated,global_batch,per_replica_batch,learning_rate",
     .example = "cpu:3",
     .format = format_devices_option, .parse = parse_devices_option,
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) {
       r.devices = c.devices;
       r.replicas_per_process = static_cast<int>(c.devices.size());
       r.simulated = is_simulated(c.devices);
     },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.devices = r.devices; }},
    // The model changes the math and the all-reduce's size: every process must agree on it. A
    // what-if model is not remembered: the next class must not silently train dense 4096.
    {.key = "model", .flag = "--model", .value_name = "M",
     .help = "a preset (reference, dense:N with N dense units, mlp, lenet5, cnn-cifar) or layers joined by '-': "
             "convF convF@K convF@Ks pool pool@s avgpool gap flatten denseN dropP, an optional HxWxC: prefix "
             "(mirrorbench-cli model M shows its layers), or a Keras model file: model.to_json() output, a .keras file, a "
             "TensorFlow.js model.json",
     .kind = OptionKind::Custom, .agree = true, .record_keys = "model,layers", .example = "dense:4096",
     .format = format_model, .parse = parse_model,
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.model = c.model; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.model = r.model; }},
    {.key = "batch", .flag = "--batch", .value_name = "B", .help = "global batch size, split across replicas",
     .kind = OptionKind::Integer, .member = &TrainConfig::batch, .min = 1, .max = kMaxGlobalBatch,
     .agree = true, .remembered = true, .record_keys = "global_batch,per_replica_batch", .example = "64",
     .resolve = [](const TrainConfig& c, const RunShape& s, RunConfig& r) {
       r.global_batch = global_batch_of(c, s.replicas);
       r.per_replica_batch = (r.global_batch + s.replicas - 1) / s.replicas;   // the largest share
     },
     .recover = [](const RunConfig& r, TrainConfig& c) {
       c.batch = r.per_replica_batch_mode ? r.per_replica_batch : r.global_batch;
     }},
    {.key = "per_replica_batch", .flag = "--per-replica-batch",
     .help = "B is per replica: global batch = B x replicas", .kind = OptionKind::Flag,
     .member = &TrainConfig::per_replica_batch, .agree = true, .remembered = true,
     .record_keys = "per_replica_batch_mode,global_batch,per_replica_batch", .example = "true",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.per_replica_batch_mode = c.per_replica_batch; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.per_replica_batch = r.per_replica_batch_mode; }},
    {.key = "lr", .flag = "--lr", .value_name = "X", .help = "Adam learning rate", .kind = OptionKind::Real,
     .member = &TrainConfig::lr, .lo = 0, .hi = 1e6, .lo_open = true, .agree = true, .remembered = true,
     .record_keys = "base_learning_rate,learning_rate", .example = "0.002",
     .resolve = [](const TrainConfig& c, const RunShape& s, RunConfig& r) {
       r.base_learning_rate = c.lr;
       // Linear scaling with the effective batch: the replicas' and the accumulated micro-batches'.
       r.learning_rate = c.scale_lr ? c.lr * s.replicas * std::max(1, c.scenario.accumulate) : c.lr;
     },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.lr = r.base_learning_rate; }},
    {.key = "scale_lr", .flag = "--scale-lr", .help = "multiply the learning rate by the replica count",
     .kind = OptionKind::Flag, .member = &TrainConfig::scale_lr, .agree = true, .remembered = true,
     .record_keys = "scale_lr,learning_rate", .example = "true",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.scale_lr = c.scale_lr; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.scale_lr = r.scale_lr; }},
    {.key = "epochs", .flag = "--epochs", .value_name = "E", .help = "epochs", .kind = OptionKind::Integer,
     .member = &TrainConfig::epochs, .min = 1, .max = 100000, .agree = true, .remembered = true,
     .record_keys = "epochs", .example = "3",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.epochs = c.epochs; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.epochs = r.epochs; }},
    {.key = "seed", .flag = "--seed", .value_name = "S", .help = "seed for weights and data order",
     .kind = OptionKind::Unsigned, .member = &TrainConfig::seed, .agree = true, .remembered = true,
     .record_keys = "seed", .example = "18446744073709551615",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.seed = c.seed; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.seed = r.seed; }},
    {.key = "limit_train", .flag = "--limit-train", .value_name = "N",
     .help = "use only the first N training images (0: all)", .kind = OptionKind::Integer,
     .member = &TrainConfig::limit_train, .min = 0, .max = kMaxI64, .agree = true, .remembered = true,
     .record_keys = "train_size", .example = "512",
     .resolve = [](const TrainConfig& c, const RunShape& s, RunConfig& r) {
       r.train_size = c.limit_train > 0 ? std::min(c.limit_train, s.train_available) : s.train_available;
     },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.limit_train = r.train_size; }},
    {.key = "limit_val", .flag = "--limit-val", .value_name = "N",
     .help = "use only the first N validation images (0: all)", .kind = OptionKind::Integer,
     .member = &TrainConfig::limit_val, .min = 0, .max = kMaxI64, .agree = true, .remembered = true,
     .record_keys = "val_size", .example = "256",
     .resolve = [](const TrainConfig& c, const RunShape& s, RunConfig& r) {
       r.val_size = c.limit_val > 0 ? std::min(c.limit_val, s.val_available) : s.val_available;
     },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.limit_val = r.val_size; }},
    {.key = "backend", .flag = "--backend", .value_name = "NAME",
     .help = "kernels: auto (the fastest for the devices), onednn or reference (CPU), cuda (GPU)",
     .kind = OptionKind::Custom, .agree = true, .remembered = true, .record_keys = "backend", .example = "reference",
     .format = format_backend, .parse = parse_backend_option,
     .resolve = [](const TrainConfig&, const RunShape& s, RunConfig& r) { r.backend = s.backend; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.backend = r.backend; }},
    {.key = "precision", .flag = "--precision", .value_name = "P",
     .help = "fp32 (default), or tf32 for GPU replicas: tensor-core convolutions and GEMMs",
     .kind = OptionKind::Custom, .syntax = "{fp32,tf32}", .agree = true, .remembered = true,
     .record_keys = "precision", .example = "tf32", .format = format_precision, .parse = parse_precision_option,
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.precision = c.precision; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.precision = r.precision; }},
    // ---- the scenario (config/scenario.h): never remembered, so a class never inherits
    // yesterday's demonstration; every process agrees on it (it changes the collectives' timing
    // or the math); the record keeps it whole under "scenario".
    {.key = "slow_replica", .flag = "--slow-replica", .value_name = "RANK:FACTOR",
     .help = "simulated straggler for demonstrations: replica RANK computes FACTOR times slower (CPU replicas)",
     .kind = OptionKind::Custom, .agree = true, .record_keys = "scenario", .example = "1:3",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.scenario.straggler = c.scenario.straggler; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.scenario.straggler = r.scenario.straggler; },
     .scenario = {.format = straggler_text, .parse = parse_straggler, .tag = straggler_tag,
                  .describe = straggler_sentence, .effect = ScenarioEffect::Simulated}},
    {.key = "simulated_link", .flag = "--simulated-link", .value_name = "GBIT[:US]",
     .help = "simulated link for demonstrations (CPU replicas): each gradient all-reduce lasts at least what a ring "
             "over GBIT Gbit/s links with US microseconds of latency would take (off: the real exchange only)",
     .kind = OptionKind::Custom, .agree = true, .record_keys = "scenario", .example = "1:50",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.scenario.link = c.scenario.link; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.scenario.link = r.scenario.link; },
     .scenario = {.format = link_text, .parse = parse_link, .tag = link_tag, .describe = link_sentence,
                  .effect = ScenarioEffect::Simulated}},
    // With one replica the share is the whole batch: the run is a lock-step run and recorded as one.
    {.key = "balance", .flag = "--balance",
     .help = "balanced shares: each CPU replica's share of the global batch follows its measured speed, so the "
             "others stop waiting for the slowest (digests differ from lock-step's)",
     .kind = OptionKind::Flag, .agree = true, .record_keys = "scenario", .example = "true",
     .resolve = [](const TrainConfig& c, const RunShape& s, RunConfig& r) {
       r.scenario.balance = c.scenario.balance && s.replicas > 1;
     },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.scenario.balance = r.scenario.balance; },
     .scenario = {.format = balance_text, .parse = parse_balance, .tag = balance_tag, .describe = balance_sentence,
                  .effect = ScenarioEffect::Math}},
    // A replay is balanced by the recorded shares (recorded as such only with several replicas).
    {.key = "shares_from", .flag = "--shares-from", .value_name = "RECORD",
     .help = "replay the share changes of a balanced run's record (same configuration), bit for bit",
     .kind = OptionKind::Custom, .agree = true, .record_keys = "scenario",
     .example = "/tmp/mirrorbench-example-record.json",
     .resolve = [](const TrainConfig& c, const RunShape& s, RunConfig& r) {
       r.scenario.shares_from = s.replicas > 1 ? c.scenario.shares_from : std::string();
     },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.scenario.shares_from = r.scenario.shares_from; },
     .scenario = {.format = replay_text, .parse = parse_replay, .tag = replay_tag, .describe = replay_sentence,
                  .effect = ScenarioEffect::Math}},
    // Remedies for communication-bound training (issue 29): they change the math, so a run with
    // one is never a baseline nor compared as the same math.
    {.key = "accumulate", .flag = "--accumulate", .value_name = "K",
     .help = "gradient accumulation: one all-reduce and one optimizer step every K micro-batches (the effective "
             "batch is K times the global batch; --scale-lr scales with it too; CPU replicas)",
     .kind = OptionKind::Custom, .agree = true, .record_keys = "scenario", .example = "4",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.scenario.accumulate = c.scenario.accumulate; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.scenario.accumulate = r.scenario.accumulate; },
     .scenario = {.format = accumulate_text, .parse = parse_accumulate, .tag = accumulate_tag,
                  .describe = accumulate_sentence, .effect = ScenarioEffect::Math}},
    {.key = "lr_warmup", .flag = "--lr-warmup", .value_name = "EPOCHS",
     .help = "gradual learning-rate warm-up (Goyal et al. 2017): the rate grows linearly, step by step, from the "
             "base rate to the run's (from 0 without --scale-lr) over the first EPOCHS epochs (may be fractional; "
             "CPU replicas)",
     .kind = OptionKind::Custom, .agree = true, .record_keys = "scenario", .example = "2",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) {
       r.scenario.lr_warmup_epochs = c.scenario.lr_warmup_epochs;
     },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.scenario.lr_warmup_epochs = r.scenario.lr_warmup_epochs; },
     .scenario = {.format = warmup_text, .parse = parse_warmup, .tag = warmup_tag, .describe = warmup_sentence,
                  .effect = ScenarioEffect::Math}},
    // With one replica nothing travels: recorded as FP32 (the run check says so).
    {.key = "allreduce_dtype", .flag = "--allreduce-dtype", .value_name = "T",
     .help = "compressed all-reduce: what the gradients travel as, fp32, or bf16 / fp16 with half the bytes (sums in "
             "FP32 in rank order, so replicas stay bit-identical; fp16 pre-scaled against underflow; CPU replicas)",
     .kind = OptionKind::Custom, .syntax = "{fp32,bf16,fp16}", .agree = true, .record_keys = "scenario",
     .example = "bf16",
     .resolve = [](const TrainConfig& c, const RunShape& s, RunConfig& r) {
       r.scenario.allreduce_dtype = s.replicas > 1 ? c.scenario.allreduce_dtype : WireDtype::Fp32;
     },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.scenario.allreduce_dtype = r.scenario.allreduce_dtype; },
     .scenario = {.format = wire_text, .parse = parse_wire, .tag = wire_tag, .describe = wire_sentence,
                  .effect = ScenarioEffect::Math}},
    // With one replica nothing travels: recorded as 0 (the run check says so).
    {.key = "powersgd", .flag = "--powersgd", .value_name = "RANK",
     .help = "PowerSGD (Vogels et al. 2019, as PyTorch's powerSGD_hook): each weight matrix is all-reduced as two "
             "rank-RANK factors with error feedback, biases and small tensors as they are; replicas stay "
             "bit-identical (0: off; CPU replicas)",
     .kind = OptionKind::Custom, .agree = true, .record_keys = "scenario", .example = "4",
     .resolve = [](const TrainConfig& c, const RunShape& s, RunConfig& r) {
       r.scenario.powersgd_rank = s.replicas > 1 ? c.scenario.powersgd_rank : 0;
     },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.scenario.powersgd_rank = r.scenario.powersgd_rank; },
     .scenario = {.format = powersgd_text, .parse = parse_powersgd, .tag = powersgd_tag,
                  .describe = powersgd_sentence, .effect = ScenarioEffect::Math}},
    // The same sums as one all-reduce: only a simulated link's times change.
    {.key = "bucket_mb", .flag = "--bucket-mb", .value_name = "MB",
     .help = "overlap: the gradient all-reduce starts bucket by bucket (MB each, in reverse layer order, as PyTorch "
             "DDP's bucket_cap_mb, 25 by default there) while the backward pass still runs; a simulated link's wire "
             "time hides under it (0: off, one all-reduce after the backward pass; CPU replicas)",
     .kind = OptionKind::Custom, .agree = true, .record_keys = "scenario", .example = "25",
     .resolve = [](const TrainConfig& c, const RunShape& s, RunConfig& r) {
       r.scenario.bucket_mb = s.replicas > 1 ? c.scenario.bucket_mb : 0;
     },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.scenario.bucket_mb = r.scenario.bucket_mb; },
     .scenario = {.format = bucket_text, .parse = parse_bucket, .tag = bucket_tag, .describe = bucket_sentence,
                  .effect = ScenarioEffect::Simulated}},
    // The input pipeline (issue 28). Its costs are what-ifs: simulated, never a baseline. The
    // data is the same and so is the math; every process agrees on the costs, so that the
    // breakdown compares like with like. 0 loaders resolves to what the cores leave.
    {.key = "input_latency", .flag = "--input-latency", .value_name = "MS",
     .help = "simulated input latency: loading each image waits MS milliseconds, as a slow disk or a network file "
             "system would make it (the loaders overlap the waits; 0: off)",
     .kind = OptionKind::Custom, .agree = true, .record_keys = "scenario", .example = "0.5",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) {
       r.scenario.input.latency_ms = c.scenario.input.latency_ms;
     },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.scenario.input.latency_ms = r.scenario.input.latency_ms; },
     .scenario = {.format = latency_text, .parse = parse_latency, .tag = latency_tag, .describe = latency_sentence,
                  .effect = ScenarioEffect::Simulated}},
    {.key = "input_cpu", .flag = "--input-cpu", .value_name = "MS",
     .help = "simulated input CPU cost: preparing each image computes for MS milliseconds, as decoding and augmenting "
             "would (on CPU replicas the loaders take the replicas' own cores; 0: off)",
     .kind = OptionKind::Custom, .agree = true, .record_keys = "scenario", .example = "0.2",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.scenario.input.cpu_ms = c.scenario.input.cpu_ms; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.scenario.input.cpu_ms = r.scenario.input.cpu_ms; },
     .scenario = {.format = input_cpu_text, .parse = parse_input_cpu, .tag = input_cpu_tag,
                  .describe = input_cpu_sentence, .effect = ScenarioEffect::Simulated}},
    {.key = "loaders", .flag = "--loaders", .value_name = "N",
     .help = "input pipeline: loader threads per replica (0: what the cores the replicas leave allow, at least 1); "
             "they run with an input cost only",
     .kind = OptionKind::Custom, .record_keys = "scenario", .example = "4", .example_with = "input_latency",
     // Without an input cost no pipeline runs: the record keeps the default, so that the run
     // stays plain (a baseline).
     .resolve = [](const TrainConfig& c, const RunShape& s, RunConfig& r) {
       r.scenario.input.loaders = c.scenario.input.costs() ? resolve_loaders(c.scenario.input.loaders, s) : 0;
     },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.scenario.input.loaders = r.scenario.input.loaders; },
     .scenario = {.format = loaders_text, .parse = parse_loaders, .tag = loaders_tag, .describe = loaders_sentence,
                  .effect = ScenarioEffect::Simulated}},
    {.key = "prefetch", .flag = "--prefetch", .value_name = "STEPS",
     .help = "input pipeline: steps each loader may prepare ahead of its replica, as DataLoader's prefetch_factor "
             "(the bounded queue holds loaders x STEPS)",
     .kind = OptionKind::Custom, .record_keys = "scenario", .example = "4", .example_with = "input_latency",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) {
       r.scenario.input.prefetch = c.scenario.input.costs() ? c.scenario.input.prefetch : InputSettings{}.prefetch;
     },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.scenario.input.prefetch = r.scenario.input.prefetch; },
     .scenario = {.format = prefetch_text, .parse = parse_prefetch, .tag = prefetch_tag, .describe = no_words,
                  .effect = ScenarioEffect::Simulated}},
    // ---- the engines' kernel choices (config/engine_options.h): for the lab, the benchmarks, the
    // GPU check and the fault tests; recorded whole under "engine_options", never remembered.
    // Those that change the bits are agreed by every process; the speed-only ones are not.
    {.key = "cpu_conv2", .flag = "--cpu-conv2", .value_name = "K",
     .help = "the CPU engine's conv2 + ReLU + pool2: own (Winograd kernels, the fastest measured), onednn (oneDNN's "
             "convolution, Winograd where oneDNN has it) or onednn-direct; each computes other bits",
     .kind = OptionKind::Custom, .syntax = "{own,onednn,onednn-direct}", .agree = true, .record_keys = "engine_options",
     .example = "onednn",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.engine.cpu_conv2 = c.engine.cpu_conv2; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.engine.cpu_conv2 = r.engine.cpu_conv2; },
     .engine = {.format = conv2_text, .parse = parse_conv2}},
    {.key = "onednn_isa", .flag = "--onednn-isa", .value_name = "ISA",
     .help = "the widest instruction set of oneDNN's kernels (the dense layers), which changes their sums: auto "
             "(oneDNN's choice, or ONEDNN_MAX_CPU_ISA), avx512_core_bf16, avx512_core, avx2, avx, sse41 (once per "
             "process)",
     .kind = OptionKind::Custom, .agree = true, .record_keys = "engine_options", .example = "avx2",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.engine.onednn_isa = c.engine.onednn_isa; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.engine.onednn_isa = r.engine.onednn_isa; },
     .engine = {.format = onednn_isa_text, .parse = parse_onednn_isa}},
    // Speed only: every Highway target computes the same bits (the golden digests), so two hosts
    // of different instruction sets train one run.
    {.key = "simd_target", .flag = "--simd-target", .value_name = "T",
     .help = "the instruction set of the own CPU kernels: auto (the best this CPU runs), avx3 (AVX-512), avx2, sse4, "
             "ssse3, scalar; every one computes the same bits",
     .kind = OptionKind::Custom, .record_keys = "engine_options", .example = "sse4",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.engine.simd_target = c.engine.simd_target; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.engine.simd_target = r.engine.simd_target; },
     .engine = {.format = simd_text, .parse = parse_simd}},
    {.key = "cuda_path", .flag = "--cuda-path", .value_name = "P",
     .help = "the GPU step: cudnn (cuDNN and cuBLAS with own epilogues) or fused (the own fused kernels)",
     .kind = OptionKind::Custom, .syntax = "{cudnn,fused}", .agree = true, .record_keys = "engine_options",
     .example = "fused",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.engine.cuda_path = c.engine.cuda_path; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.engine.cuda_path = r.engine.cuda_path; },
     .engine = {.format = cuda_path_text, .parse = parse_cuda_path}},
    // Which cuDNN algorithms win depends on how long they are measured: the bits too.
    {.key = "cudnn_tune", .flag = "--cudnn-tune", .value_name = "S",
     .help = "seconds the GPU warm-up may spend measuring cuDNN's algorithms per step shape (0: the heuristic's first "
             "choice)",
     .kind = OptionKind::Custom, .syntax = "[0, 600]", .agree = true, .record_keys = "engine_options", .example = "1",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.engine.cudnn_tune_s = c.engine.cudnn_tune_s; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.engine.cudnn_tune_s = r.engine.cudnn_tune_s; },
     .engine = {.format = tune_text, .parse = parse_tune}},
    {.key = "cuda_graphs", .flag = "--no-cuda-graphs",
     .help = "run every GPU step eagerly, without CUDA graphs (to measure what they save)",
     .kind = OptionKind::Flag, .inverted = true, .record_keys = "engine_options", .example = "false",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.engine.cuda_graphs = c.engine.cuda_graphs; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.engine.cuda_graphs = r.engine.cuda_graphs; },
     .engine = {.format = graphs_text, .parse = parse_graphs}},
    {.key = "inject_fault", .flag = "--inject-fault", .value_name = "KIND:STEP[:RANK]",
     .help = "a GPU fault on purpose, for the fault tests: stall, hang or abort at training step STEP (from 1) on "
             "replica RANK (default 0)",
     .kind = OptionKind::Custom, .agree = true, .record_keys = "engine_options", .example = "abort:3:1",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.engine.fault = c.engine.fault; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.engine.fault = r.engine.fault; },
     .engine = {.format = fault_text, .parse = parse_fault}},
    {.key = "pace", .flag = "--pace", .value_name = "S",
     .help = "teaching pace: every step lasts at least S seconds (e.g. 1) and is reported in detail (0: off)",
     .kind = OptionKind::Real, .member = &TrainConfig::step_delay_s, .lo = 0, .hi = 60, .agree = true,
     .record_keys = "step_delay_s", .example = "0.5",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.step_delay_s = c.step_delay_s; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.step_delay_s = r.step_delay_s; }},
    {.key = "time_phases", .flag = "--no-breakdown",
     .help = "do not time the phases of each step (only to measure what the breakdown itself costs)",
     .kind = OptionKind::Flag, .member = &TrainConfig::time_phases, .inverted = true, .agree = true,
     .record_keys = "time_phases", .example = "false",
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.time_phases = c.time_phases; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.time_phases = r.time_phases; }},
    // Set by the output option --trace FILE; every process samples its steps for the gather.
    {.key = "trace", .help = "keep sampled per-step phase events for a Chrome trace", .kind = OptionKind::Flag,
     .member = &TrainConfig::trace, .agree = true, .example = "true"},
    {.key = "timeout", .flag = "--timeout", .value_name = "S",
     .help = "seconds any wait for another replica, another process (mpirun, srun) or a GPU may last before the "
             "run fails naming the ones that did not answer or finish",
     .kind = OptionKind::Real, .member = &TrainConfig::timeout_s, .lo = 0, .hi = 86400, .lo_open = true,
     .example = "5"},
};

bool parse_flag(const TrainOption& o, std::string_view text) { return flag_text(o.flag.empty() ? o.key : o.flag, text); }


}  // namespace

std::span<const TrainOption> train_options() { return kOptions; }

const TrainOption& train_option(std::string_view key) {
  for (const TrainOption& o : kOptions)
    if (o.key == key) return o;
  throw std::out_of_range(fmt::format("no training option '{}'", key));
}

std::string option_text(const TrainOption& o, const TrainConfig& c) {
  if (o.is_scenario()) return o.scenario.format(c.scenario);
  if (o.is_engine()) return o.engine.format(c.engine);
  if (o.kind == OptionKind::Custom) return o.format(c);
  return std::visit(
      [&](auto member) -> std::string {
        using M = decltype(member);
        if constexpr (std::is_same_v<M, std::monostate>) {
          return {};
        } else {
          const auto& v = c.*member;
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, bool>) return v ? "true" : "false";
          else if constexpr (std::is_same_v<V, std::string>) return v;
          else return fmt::format("{}", v);   // doubles: the shortest text that reads back the same
        }
      },
      o.member);
}

void set_option(const TrainOption& o, TrainConfig& c, std::string_view text) {
  // A value that starts with "--" is the next option, taken for this one's value.
  const bool takes_text = o.kind == OptionKind::Text || o.kind == OptionKind::Custom;
  MB_CHECK(!(takes_text && text.rfind("--", 0) == 0), ConfigError, "{}: needs a value, not the option '{}'", o.flag,
           text);
  if (o.is_scenario()) {
    o.scenario.parse(c.scenario, text);
    return;
  }
  if (o.is_engine()) {
    o.engine.parse(c.engine, text);
    return;
  }
  if (o.kind == OptionKind::Custom) {
    o.parse(c, text);
    return;
  }
  std::visit(
      [&](auto member) {
        using M = decltype(member);
        if constexpr (!std::is_same_v<M, std::monostate>) {
          auto& v = c.*member;
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, bool>) v = parse_flag(o, text);
          else if constexpr (std::is_same_v<V, std::string>) v = std::string(text);
          else if constexpr (std::is_same_v<V, double>) v = parse_real_option(o.flag, text, o.lo, o.hi, o.lo_open);
          else if constexpr (std::is_same_v<V, uint64_t>) v = parse_unsigned_option(o.flag, text);
          else v = static_cast<V>(parse_integer_option(o.flag, text, o.min, o.max));
        }
      },
      o.member);
}

bool is_default(const TrainOption& o, const TrainConfig& c) { return option_text(o, c) == option_text(o, TrainConfig{}); }

std::string option_value_help(const TrainOption& o) {
  switch (o.kind) {
    case OptionKind::Flag: return {};
    case OptionKind::Integer: return fmt::format("{}:{}", o.value_name, integer_range_text(o.min, o.max));
    case OptionKind::Unsigned: return fmt::format("{}:0..2^64-1", o.value_name);
    case OptionKind::Real: return fmt::format("{}:{}", o.value_name, real_range_text(o.lo, o.hi, o.lo_open));
    case OptionKind::Text: return std::string(o.value_name);
    case OptionKind::Custom:
      return o.syntax.empty() ? std::string(o.value_name) : fmt::format("{}:{}", o.value_name, o.syntax);
  }
  return std::string(o.value_name);
}

uint64_t config_digest(const TrainConfig& c) {
  std::string text;
  for (const TrainOption& o : kOptions)
    if (o.agree) text += fmt::format("{}={}|", o.key, option_text(o, c));
  return digest64(text.data(), text.size());
}

RunConfig resolve_options(const TrainConfig& c, const RunShape& shape) {
  RunConfig r;
  r.replicas = shape.replicas;
  r.processes = shape.processes;
  for (const TrainOption& o : kOptions)
    if (o.resolve) o.resolve(c, shape, r);
  return r;
}

TrainConfig request_from_record(const RunConfig& r) {
  TrainConfig c;
  for (const TrainOption& o : kOptions)
    if (o.recover) o.recover(r, c);
  return c;
}

std::vector<std::string> scenario_tags(const Scenario& s, std::optional<ScenarioEffect> only) {
  std::vector<std::string> out;
  for (const TrainOption& o : kOptions)
    if (o.is_scenario() && (!only || o.scenario.effect == *only))
      if (std::string tag = o.scenario.tag(s); !tag.empty()) out.push_back(std::move(tag));
  return out;
}

std::vector<std::string> scenario_descriptions(const Scenario& s) {
  std::vector<std::string> out;
  for (const TrainOption& o : kOptions)
    if (o.is_scenario())
      if (std::string text = o.scenario.describe(s); !text.empty()) out.push_back(std::move(text));
  return out;
}

namespace {
// The scenario fields that are on (their text differs from the default's).
template <typename F>
bool any_on(const Scenario& s, F&& pred) {
  static const Scenario off{};
  for (const TrainOption& o : kOptions)
    if (o.is_scenario() && o.scenario.format(s) != o.scenario.format(off) && pred(o)) return true;
  return false;
}
}  // namespace

bool is_plain(const Scenario& s) {
  return !any_on(s, [](const TrainOption&) { return true; });
}

bool changes_math(const Scenario& s) {
  return any_on(s, [](const TrainOption& o) { return o.scenario.effect == ScenarioEffect::Math; });
}

std::vector<std::pair<std::string, std::string>> scenario_texts(const Scenario& s) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const TrainOption& o : kOptions)
    if (o.is_scenario()) out.emplace_back(std::string(o.key), o.scenario.format(s));
  return out;
}

void set_scenario_text(Scenario& s, std::string_view key, std::string_view text) {
  for (const TrainOption& o : kOptions)
    if (o.is_scenario() && o.key == key) return o.scenario.parse(s, text);
  throw ConfigError(fmt::format("'{}' is not a field of the scenario", key));
}

std::vector<std::pair<std::string, std::string>> engine_option_texts(const EngineOptions& e) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const TrainOption& o : kOptions)
    if (o.is_engine()) out.emplace_back(std::string(o.key), o.engine.format(e));
  return out;
}

void set_engine_option_text(EngineOptions& e, std::string_view key, std::string_view text) {
  for (const TrainOption& o : kOptions)
    if (o.is_engine() && o.key == key) return o.engine.parse(e, text);
  throw ConfigError(fmt::format("'{}' is not one of the engines' options", key));
}

std::vector<std::string> option_arguments(const TrainConfig& c) {
  std::vector<std::string> args;
  for (const TrainOption& o : kOptions) {
    // Every value, defaults too: the other side may be another version with other defaults.
    // A flag can only say "on", so it appears when it differs from its default.
    if (o.flag.empty() || (o.kind == OptionKind::Flag && is_default(o, c))) continue;
    args.emplace_back(o.flag);
    if (o.kind != OptionKind::Flag) args.push_back(option_text(o, c));
  }
  return args;
}

}  // namespace mb
