// The rules of a run (see run_check.h). Ranges come from the option table, capabilities from
// the backend registry; what is left here is what relates one option to another or to the
// machine.
#include "trainer/run_check.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <utility>

#include <fmt/format.h>

#include "backends/registry.h"
#include "config/train_options.h"
#include "model/model_spec.h"
#include "util/error.h"

namespace mb {
namespace {

struct Problems {
  std::vector<RunProblem> list;
  void error(std::string_view option, std::string message) {
    list.push_back({std::string(option), std::move(message), RunProblem::Severity::Error});
  }
  void advice(std::string_view option, std::string message) {
    list.push_back({std::string(option), std::move(message), RunProblem::Severity::Advice});
  }
};

// Every number within the range its row of the table gives (the flags were checked when
// parsed; a TrainConfig filled in code, e.g. by the workbench's fields, is checked here).
void check_ranges(const TrainConfig& c, Problems& p) {
  for (const TrainOption& o : train_options()) {
    if (o.kind != OptionKind::Integer && o.kind != OptionKind::Real && o.kind != OptionKind::Unsigned) continue;
    TrainConfig probe;
    try {
      set_option(o, probe, option_text(o, c));
    } catch (const ConfigError& e) {
      p.error(o.key, e.what());
    }
  }
}

// Balanced shares follow each replica's measured compute: engines that take any share and time
// their phases every step.
void check_balance(const TrainConfig& c, const BackendInfo& b, Problems& p) {
  const Scenario& s = c.scenario;
  if (!s.balanced()) return;
  const std::string_view key = s.balance ? "balance" : "shares_from";
  if (!b.balanced_shares)
    p.error(key, fmt::format("--balance: balanced shares are for CPU replicas (cpu:N) in this version; the {} engine "
                             "reports every 64 steps and keys its CUDA graphs by a fixed share",
                             to_string(b.backend)));
  else if (!c.time_phases && s.shares_from.empty())
    p.error("balance", "--balance measures each replica's compute with the step breakdown: it cannot run with "
                       "--no-breakdown (or replay measured shares with --shares-from RECORD)");
}

// The remedies change the step itself: accumulation keeps a gradient across micro-batches and
// the warm-up changes the rate step by step, which the host engines' generic step does; the
// CUDA engine's captured step is not validated for either on a GPU yet.
void check_remedies(const TrainConfig& c, const BackendInfo& b, int replicas, Problems& p) {
  const Scenario& s = c.scenario;
  if (s.accumulate > 1 && !b.host_step)
    p.error("accumulate", fmt::format("--accumulate: gradient accumulation runs on CPU replicas (cpu:N) in this "
                                      "version; the {} engine's captured step is not validated with it on a GPU yet",
                                      to_string(b.backend)));
  if (s.allreduce_dtype != WireDtype::Fp32) {
    if (!b.host_step)
      p.error("allreduce_dtype", fmt::format("--allreduce-dtype: the compressed all-reduce runs between CPU replicas "
                                             "(cpu:N) in this version; the {} engine's NCCL step is not validated with "
                                             "it on a GPU yet",
                                             to_string(b.backend)));
    else if (replicas < 2)
      p.advice("allreduce_dtype", "--allreduce-dtype changes nothing with one replica: nothing travels (recorded as fp32)");
  }
  if (s.bucket_mb > 0) {
    if (!b.host_step)
      p.error("bucket_mb", fmt::format("--bucket-mb: overlap in buckets runs on CPU replicas (cpu:N) in this version; "
                                       "the {} engine's captured step is not validated with it on a GPU yet",
                                       to_string(b.backend)));
    else if (replicas < 2)
      p.advice("bucket_mb", "--bucket-mb changes nothing with one replica: there is no all-reduce");
    else if (!s.link.on())
      p.advice("bucket_mb", "--bucket-mb overlaps a simulated link's wire time with the backward pass; without "
                            "--simulated-link this machine's replicas reduce in their own memory, which nothing "
                            "hides, so the times stay as they are");
    else if (!b.gradient_timeline)
      p.advice("bucket_mb", fmt::format("--bucket-mb: the {} engine tells no layer's gradient apart from the end of "
                                        "its backward pass, so nothing overlaps (--backend onednn does)",
                                        to_string(b.backend)));
  }
  if (s.powersgd_rank > 0) {
    if (!b.host_step)
      p.error("powersgd", fmt::format("--powersgd: PowerSGD runs between CPU replicas (cpu:N) in this version; the {} "
                                      "engine's NCCL step is not validated with it on a GPU yet",
                                      to_string(b.backend)));
    else if (replicas < 2)
      p.advice("powersgd", "--powersgd changes nothing with one replica: nothing travels, so nothing is compressed "
                           "(recorded as 0)");
    else if (s.allreduce_dtype != WireDtype::Fp32)
      p.error("powersgd", "--powersgd with --allreduce-dtype: PowerSGD's factors travel in FP32; choose one of the two");
    else if (s.bucket_mb > 0)
      p.error("powersgd", "--powersgd with --bucket-mb: PowerSGD compresses the whole gradient after the backward "
                          "pass; buckets would split the matrices its factors are made of. Choose one of the two");
  }
  if (s.lr_warmup_epochs > 0 && !b.host_step)
    p.error("lr_warmup", fmt::format("--lr-warmup: the warm-up runs on CPU replicas (cpu:N) in this version; the {} "
                                     "engine's captured step is not validated with a changing rate on a GPU yet",
                                     to_string(b.backend)));
}

// A ModelSpec is checked when it is made (model_shape.h's limits); what remains is whether the
// backend can train it (the registry's supports: the CUDA backend, the reference family only
// until the GPU check has run).
void check_model(const TrainConfig& c, const BackendInfo& b, Problems& p) {
  if (const std::string why = b.refuses(c.model); !why.empty())
    p.error("model", fmt::format("--model {}: the {} backend cannot train it: {}", c.model.name(), to_string(b.backend), why));
}

// The simulated link sleeps on the host after the exchange, so only replicas whose step ends
// on the host (the registry's CPU rows) can be slowed by it, as with the straggler.
void check_link(const TrainConfig& c, const BackendInfo& b, int replicas, Problems& p) {
  const SimulatedLink& link = c.scenario.link;
  if (link.gbit == 0 && link.latency_us == 0) return;
  if (!(std::isfinite(link.gbit) && link.gbit > 0 && link.gbit <= 1e5))
    p.error("simulated_link", fmt::format("--simulated-link: the bandwidth must be in (0, 1e5] Gbit/s (got {})",
                                          link.gbit));
  if (!(std::isfinite(link.latency_us) && link.latency_us >= 0 && link.latency_us <= 1e6))
    p.error("simulated_link", fmt::format("--simulated-link: the latency must be in 0..1e6 us (got {})",
                                          link.latency_us));
  if (!b.simulated_link)
    p.error("simulated_link",
            "--simulated-link simulates a link between CPU replicas only (a GPU step runs ahead of the host)");
  else if (replicas < 2)
    p.advice("simulated_link", "--simulated-link changes nothing with one replica: there is no all-reduce");
}

// The simulated straggler sleeps on the host after its replica's compute, so only replicas
// whose step ends on the host (the registry's CPU rows) can be slowed by it.
void check_straggler(const TrainConfig& c, const BackendInfo& b, int replicas, Problems& p) {
  const Straggler& slow = c.scenario.straggler;
  if (!slow.on()) return;
  if (!b.straggler)
    p.error("slow_replica",
            "--slow-replica simulates a straggler on CPU replicas only (a GPU step runs ahead of the host)");
  else if (replicas < 2)
    p.error("slow_replica", "the simulated straggler needs two or more replicas: the others are the ones that wait "
                            "for it");
  else if (slow.replica >= replicas)
    p.error("slow_replica", fmt::format("--slow-replica {}: the run has replicas 0..{}", slow.replica, replicas - 1));
  if (!(std::isfinite(slow.factor) && slow.factor >= 1.0 && slow.factor <= 100.0))
    p.error("slow_replica", fmt::format("--slow-replica: the factor must be in 1..100 (got {})", slow.factor));
}

void check_backend(const TrainConfig& c, int replicas, Problems& p) {
  const DeviceKind kind = device_kind(c.devices);
  Backend backend{};
  try {
    backend = resolve_backend(kind, c.backend);
  } catch (const ConfigError& e) {
    p.error("backend", e.what());
    return;
  }
  const BackendInfo& b = backend_info(backend);
  if (!b.built())
    p.error("devices", fmt::format("{}: this mirrorbench was {}; use cpu:N", format_devices(c.devices), b.not_built));
  // The CPU engines compute in FP32 only: a tf32 request there would record a precision the
  // run did not use, so it is refused rather than ignored.
  if (!b.supports(c.precision))
    p.error("precision", fmt::format("--precision {} needs GPU replicas (cuda:...); the {} engine computes in fp32 "
                                     "only",
                                     to_string(c.precision), to_string(backend)));
  check_model(c, b, p);
  check_balance(c, b, p);
  check_link(c, b, replicas, p);
  check_straggler(c, b, replicas, p);
  check_remedies(c, b, replicas, p);
}

// The engines' options of the other kind of device change nothing here: said, not refused (a
// script may pass one set of options to CPU and GPU runs alike).
void check_engine_options(const TrainConfig& c, Problems& p) {
  const EngineOptions& e = c.engine;
  const EngineOptions plain;
  const bool cpu = device_kind(c.devices) == DeviceKind::Cpu;
  const std::pair<std::string_view, bool> gpu_only[] = {{"cuda_path", e.cuda_path != plain.cuda_path},
                                                        {"cuda_graphs", e.cuda_graphs != plain.cuda_graphs},
                                                        {"cudnn_tune", e.cudnn_tune_s != plain.cudnn_tune_s},
                                                        {"inject_fault", e.fault.active()}};
  const std::pair<std::string_view, bool> cpu_only[] = {{"cpu_conv2", e.cpu_conv2 != plain.cpu_conv2},
                                                        {"onednn_isa", e.onednn_isa != plain.onednn_isa},
                                                        {"simd_target", e.simd_target != plain.simd_target}};
  using Row = std::pair<std::string_view, bool>;
  for (const auto& [key, set] : cpu ? std::span<const Row>(gpu_only) : std::span<const Row>(cpu_only))
    if (set)
      p.advice(key, fmt::format("{} is for {} replicas: this run on {} ignores it", train_option(key).flag,
                                cpu ? "GPU" : "CPU", format_devices(c.devices)));
}

void check_batch(const TrainConfig& c, int replicas, Problems& p) {
  if (c.batch < 1 || c.batch > kMaxGlobalBatch) return;   // check_ranges said so
  const int64_t global = c.per_replica_batch ? c.batch * replicas : c.batch;
  if (global < replicas)
    p.error("batch", fmt::format("global batch {} is smaller than the {} replicas: every replica needs at least one "
                                 "sample (use a batch of at least {}, or a batch per replica)",
                                 global, replicas, replicas));
  if (global > kMaxGlobalBatch)
    p.error("batch", fmt::format("global batch {} is larger than the supported {}", global, kMaxGlobalBatch));
  // The learning rate after scaling must survive the conversion to float.
  const double lr = c.scale_lr ? c.lr * replicas : c.lr;
  if (std::isfinite(c.lr) && c.lr > 0 && !(lr <= 1e6))
    p.error("lr", fmt::format("--lr {} x {} replicas is larger than 1e6", c.lr, replicas));
  if (c.limit_train > 0 && c.limit_train < global)
    p.advice("limit_train", fmt::format("the {} training images are fewer than one global batch ({}): each epoch is "
                                        "a single step",
                                        c.limit_train, global));
}

// What the devices and processes ask of this machine (when every process runs here).
void check_machine(const TrainConfig& c, const RunSite& site, Problems& p) {
  if (!site.machine) return;
  const DeviceInventory& inv = *site.machine;
  const DeviceKind kind = device_kind(c.devices);
  if (kind == DeviceKind::Cpu) {
    const int cpus = int(c.devices.size()) * site.processes;
    if (cpus <= inv.cpu_cores) return;
    if (site.processes > 1)
      p.error("devices", fmt::format("{} processes x {} CPU replica(s) need {} cores; this machine has {}. Use fewer "
                                     "processes or replicas, or a hostfile that lists more machines",
                                     site.processes, c.devices.size(), cpus, inv.cpu_cores));
    else
      p.advice("devices", fmt::format("cpu:{} asks for more replicas than the {} cores here: replicas will share "
                                      "cores and the timings will not mean much",
                                      cpus, inv.cpu_cores));
    return;
  }
  if (!backend_info(Backend::Cuda).built()) return;   // check_backend said so
  if (inv.gpus.empty()) {
    p.error("devices", fmt::format("{}: no usable GPU on this machine ({})", format_devices(c.devices), inv.gpu_note));
    return;
  }
  if (uses_local_gpu(c.devices)) {
    if (site.processes > int(inv.gpus.size()))
      p.error("devices", fmt::format("{} processes need {} GPUs, one each; this machine has {}. Use fewer processes, "
                                     "or a hostfile that lists more machines",
                                     site.processes, site.processes, inv.gpus.size()));
    return;
  }
  for (const DeviceSpec& d : c.devices)
    if (d.index >= int(inv.gpus.size())) {
      p.error("devices", fmt::format("cuda:{}: no such GPU; this machine has {} (cuda:0..cuda:{})", d.index,
                                     inv.gpus.size(), inv.gpus.size() - 1));
      return;
    }
}

void check_devices(const TrainConfig& c, const RunSite& site, Problems& p) {
  if (c.devices.empty()) {
    p.error("devices", "no device selected: use cpu:N or cuda:I[,cuda:J...]");
    return;
  }
  if (device_kind(c.devices) != DeviceKind::Cuda) return;
  const bool one_gpu = std::all_of(c.devices.begin(), c.devices.end(),
                                   [&](const DeviceSpec& d) { return d.index == c.devices.front().index; });
  if (is_simulated(c.devices) && !one_gpu)
    p.error("devices", fmt::format("device list '{}' shares some GPUs and not others; use distinct GPUs (NCCL) or "
                                   "one GPU (simulated)",
                                   format_devices(c.devices)));
  if (is_simulated(c.devices) && site.processes > 1)
    p.error("devices", "several replicas per GPU (simulated) run in one process only: use one replica per GPU "
                       "(cuda:local) across processes");
  if (uses_local_gpu(c.devices) && site.processes < 2 && site.machine && site.machine->gpus.size() > 1)
    p.advice("devices", "cuda:local in one process is cuda:0");
}

}  // namespace

int total_replicas(const TrainConfig& config, int processes) {
  return static_cast<int>(config.devices.size()) * std::max(1, processes);
}

int64_t global_batch(const TrainConfig& config, int processes) {
  return config.per_replica_batch ? config.batch * total_replicas(config, processes) : config.batch;
}

std::vector<RunProblem> check_run(const TrainConfig& c, const RunSite& site) {
  Problems p;
  if (site.processes < 1) p.error("processes", fmt::format("a run needs at least one process (got {})", site.processes));
  const int replicas = total_replicas(c, site.processes);
  check_ranges(c, p);
  check_devices(c, site, p);
  if (!c.devices.empty()) {
    check_backend(c, replicas, p);
    check_engine_options(c, p);
    check_batch(c, replicas, p);
    if (site.this_machine_only) check_machine(c, site, p);
  }
  std::stable_partition(p.list.begin(), p.list.end(), [](const RunProblem& x) { return x.is_error(); });
  return p.list;
}

std::vector<RunProblem> require_runnable(const TrainConfig& config, const RunSite& site) {
  std::vector<RunProblem> problems = check_run(config, site);
  std::string errors;
  std::vector<RunProblem> advice;
  for (RunProblem& x : problems) {
    if (x.is_error()) errors += (errors.empty() ? "" : "\n") + x.message;
    else advice.push_back(std::move(x));
  }
  if (!errors.empty()) throw ConfigError(errors);
  return advice;
}

}  // namespace mb
