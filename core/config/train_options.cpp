// The training options' table and the generic code that reads, writes, checks, digests and
// resolves them (see train_options.h).
#include "config/train_options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "config/option_text.h"
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

// The simulated straggler: "RANK:FACTOR", or "off".
std::string format_straggler(const TrainConfig& c) {
  return c.slow_replica < 0 ? std::string("off") : fmt::format("{}:{}", c.slow_replica, c.slow_factor);
}
void parse_straggler(TrainConfig& c, std::string_view spec) {
  if (spec.empty() || spec == "off") {
    c.slow_replica = -1;
    c.slow_factor = 1.0;
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
  c.slow_replica = r;
  c.slow_factor = f;
}

std::string format_model(const TrainConfig& c) { return model_text(c.model); }
void parse_model(TrainConfig& c, std::string_view text) { c.model = model_from_text(text); }

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

std::string format_link(const TrainConfig& c) { return simulated_link_text({c.link_gbit, c.link_latency_us}); }
void parse_link(TrainConfig& c, std::string_view spec) {
  const SimulatedLink link = simulated_link_from_text(spec);
  c.link_gbit = link.gbit;
  c.link_latency_us = link.latency_us;
}

// ---- what the options resolve to in the record, and back ------------------------------------

const TrainOption kOptions[] = {
    {.key = "data_dir", .flag = "--data", .value_name = "DIR",
     .help = "IDX folder in the MNIST layout (default: $MIRRORBENCH_DATA or Fashion-MNIST)",
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
    // The model changes the math and the all-reduce's size: every process must agree on it.
    {.key = "model", .flag = "--model", .value_name = "M",
     .help = "reference (the reference CNN, dense 64) or dense:N, a what-if model whose dense layer has N units "
             "(18,826 + 1,611 N parameters; N in 1..16384; presets 1024, 4096, 8192)",
     .kind = OptionKind::Custom, .agree = true, .remembered = true, .record_keys = "model", .example = "dense:4096",
     .format = format_model, .parse = parse_model,
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) { r.model = c.model.name(); },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.model = model_from_text(r.model); }},
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
       r.learning_rate = c.scale_lr ? c.lr * s.replicas : c.lr;
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
    {.key = "slow_replica", .flag = "--slow-replica", .value_name = "RANK:FACTOR",
     .help = "simulated straggler for demonstrations: replica RANK computes FACTOR times slower (CPU replicas)",
     .kind = OptionKind::Custom, .agree = true, .record_keys = "slow_replica,slow_factor", .example = "1:3",
     .format = format_straggler, .parse = parse_straggler,
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) {
       r.slow_replica = c.slow_replica;
       r.slow_factor = c.slow_replica >= 0 ? c.slow_factor : 1.0;
     },
     .recover = [](const RunConfig& r, TrainConfig& c) {
       c.slow_replica = r.slow_replica;
       c.slow_factor = r.slow_replica >= 0 ? r.slow_factor : 1.0;
     }},
    {.key = "simulated_link", .flag = "--simulated-link", .value_name = "GBIT[:US]",
     .help = "simulated link for demonstrations (CPU replicas): each gradient all-reduce lasts at least what a ring "
             "over GBIT Gbit/s links with US microseconds of latency would take (off: the real exchange only)",
     .kind = OptionKind::Custom, .agree = true, .record_keys = "link_gbit,link_latency_us", .example = "1:50",
     .format = format_link, .parse = parse_link,
     .resolve = [](const TrainConfig& c, const RunShape&, RunConfig& r) {
       r.link_gbit = c.link_gbit;
       r.link_latency_us = c.link_gbit > 0 ? c.link_latency_us : 0;
     },
     .recover = [](const RunConfig& r, TrainConfig& c) {
       c.link_gbit = r.link_gbit;
       c.link_latency_us = r.link_gbit > 0 ? r.link_latency_us : 0;
     }},
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
    // With one replica the share is the whole batch: the run is a lock-step run and recorded as one.
    {.key = "balance", .flag = "--balance",
     .help = "balanced shares: each CPU replica's share of the global batch follows its measured speed, so the "
             "others stop waiting for the slowest (digests differ from lock-step's)",
     .kind = OptionKind::Flag, .member = &TrainConfig::balance, .agree = true, .remembered = true,
     .record_keys = "balance", .example = "true",
     .resolve = [](const TrainConfig& c, const RunShape& s, RunConfig& r) { r.balance = c.balance && s.replicas > 1; },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.balance = r.balance; }},
    // A replay is balanced by the recorded shares (after the balance row, which it extends).
    {.key = "shares_from", .flag = "--shares-from", .value_name = "RECORD",
     .help = "replay the share changes of a balanced run's record (same configuration), bit for bit",
     .kind = OptionKind::Text, .member = &TrainConfig::shares_from, .agree = true,
     .record_keys = "shares_from,balance", .example = "/tmp/mirrorbench-example-record.json",
     .resolve = [](const TrainConfig& c, const RunShape& s, RunConfig& r) {
       r.shares_from = c.shares_from;
       r.balance = r.balance || (!c.shares_from.empty() && s.replicas > 1);
     },
     .recover = [](const RunConfig& r, TrainConfig& c) { c.shares_from = r.shares_from; }},
    // Set by the output option --trace FILE; every process samples its steps for the gather.
    {.key = "trace", .help = "keep sampled per-step phase events for a Chrome trace", .kind = OptionKind::Flag,
     .member = &TrainConfig::trace, .agree = true, .example = "true"},
    {.key = "timeout", .flag = "--timeout", .value_name = "S",
     .help = "seconds any wait for another replica, another process (mpirun, srun) or a GPU may last before the "
             "run fails naming the ones that did not answer or finish",
     .kind = OptionKind::Real, .member = &TrainConfig::timeout_s, .lo = 0, .hi = 86400, .lo_open = true,
     .example = "5"},
};

bool parse_flag(const TrainOption& o, std::string_view text) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  throw ConfigError(fmt::format("{}: expects true or false, got '{}'", o.flag.empty() ? o.key : o.flag, text));
}

}  // namespace

std::span<const TrainOption> train_options() { return kOptions; }

const TrainOption& train_option(std::string_view key) {
  for (const TrainOption& o : kOptions)
    if (o.key == key) return o;
  throw std::out_of_range(fmt::format("no training option '{}'", key));
}

std::string option_text(const TrainOption& o, const TrainConfig& c) {
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
