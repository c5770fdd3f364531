// Strict argument parsing for mirrorbench-cli.
#include "cli_options.h"

#include <charconv>
#include <cmath>

#include "util/error.h"

namespace mb::cli {
namespace {

template <typename T>
T parse_number(const std::string& flag, const std::string& text) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  MB_CHECK(ec == std::errc() && ptr == end && !text.empty(), ConfigError,
           "{} expects a number, got '{}'", flag, text);
  return value;
}

double parse_double(const std::string& flag, const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  MB_CHECK(used == text.size() && !text.empty() && std::isfinite(v), ConfigError,
           "{} expects a number, got '{}'", flag, text);
  return v;
}

}  // namespace

std::string usage() {
  return R"(mirrorbench-cli: data-parallel ("mirrored") CNN training on CPU replicas and GPUs

usage:
  mirrorbench-cli train [options]     train the reference CNN, one line per epoch
  mirrorbench-cli devices             list the devices this machine offers
  mirrorbench-cli selftest            check every available backend against the reference
  mirrorbench-cli --version           version and enabled components

train options:
  --data DIR            IDX folder (default: Fashion-MNIST, /usr/share/datasets/fashion-mnist)
  --devices LIST        cpu:N (N CPU replicas, one core each) or cuda:0,cuda:1 (default cpu:1)
  --batch B             global batch size, split across replicas (default 128)
  --per-replica-batch   B is per replica: global batch = B x replicas
  --lr X                Adam learning rate (default 0.001)
  --scale-lr            multiply the learning rate by the replica count
  --epochs E            epochs (default 5)
  --seed S              seed for weights and data order (default 1)
  --limit-train N       use only the first N training images
  --limit-val N         use only the first N validation images
  --backend NAME        CPU kernels: auto, onednn, reference (default auto)
  --precision P         fp32 (default) or tf32 (GPU replicas: TF32 tensor-core convolutions/GEMMs)
  --json FILE           write the run record as JSON
  --csv FILE            write the per-epoch metrics as CSV
  --save FILE           write the trained weights as safetensors (PyTorch names and layouts)
  --verbose             log details to stderr
)";
}

Options parse(const std::vector<std::string>& args) {
  Options o;
  if (args.empty()) return o;
  std::size_t i = 0;
  const std::string& first = args[0];
  if (first == "train") o.command = Command::Train;
  else if (first == "devices") o.command = Command::Devices;
  else if (first == "selftest") o.command = Command::Selftest;
  else if (first == "--version" || first == "version") o.command = Command::Version;
  else if (first == "--help" || first == "-h" || first == "help") o.command = Command::Help;
  else throw ConfigError("unknown command '" + first + "' (try: train, devices, selftest, --version, --help)");
  ++i;

  auto value = [&](const std::string& flag) -> const std::string& {
    MB_CHECK(i + 1 < args.size(), ConfigError, "{} needs a value", flag);
    return args[++i];
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    TrainConfig& t = o.train;
    const bool train = o.command == Command::Train;
    if (a == "--verbose") o.verbose = true;
    else if (a == "--help" || a == "-h") o.command = Command::Help;
    else if (train && a == "--data") t.data_dir = value(a);
    else if (train && a == "--devices") t.devices = value(a);
    else if (train && a == "--batch") t.batch = parse_number<int64_t>(a, value(a));
    else if (train && a == "--per-replica-batch") t.per_replica_batch = true;
    else if (train && a == "--lr") t.lr = parse_double(a, value(a));
    else if (train && a == "--scale-lr") t.scale_lr = true;
    else if (train && a == "--epochs") t.epochs = parse_number<int>(a, value(a));
    else if (train && a == "--seed") t.seed = parse_number<uint64_t>(a, value(a));
    else if (train && a == "--limit-train") t.limit_train = parse_number<int64_t>(a, value(a));
    else if (train && a == "--limit-val") t.limit_val = parse_number<int64_t>(a, value(a));
    else if (train && a == "--backend") t.backend = value(a);
    else if (train && a == "--precision") t.precision = value(a);
    else if (train && a == "--json") o.json_out = value(a);
    else if (train && a == "--csv") o.csv_out = value(a);
    else if (train && a == "--save") o.save_out = value(a);
    else throw ConfigError("unknown option '" + a + "' for '" + first + "' (see --help)");
  }
  return o;
}

}  // namespace mb::cli
