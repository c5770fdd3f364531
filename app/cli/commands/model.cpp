// `mirrorbench-cli model SPEC`: a model's layers as Keras's model.summary() shows them, with
// what mirrored training adds (all-reduce bytes, FLOPs per image, memory per replica); --json
// for programs. An invalid spec exits 2 naming the layer and why.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli_options.h"
#include "model/model_summary.h"
#include "model/model_text.h"

namespace mb::cli {
namespace {

struct ModelFlags {
  std::string spec;
  int64_t batch = 128;
  bool json = false;
};
ModelFlags& flags() {
  static ModelFlags f;
  return f;
}

void add_model_options(CLI::App& sub, Options&) {
  sub.add_option("spec", flags().spec,
                 "a preset (reference, dense:N, mlp, lenet5, cnn-cifar) or layers joined by '-' (see --model)")
      ->required()
      ->type_name("SPEC");
  sub.add_option("--batch", flags().batch, "the per-replica batch the memory is given for (default 128)")
      ->transform(integer_in(1, 1 << 20))
      ->type_name("B");
  sub.add_flag("--json", flags().json, "write the table as JSON on standard output");
}

int run_model(const Options&) {
  const ModelSpec model = model_from_text(flags().spec);   // ConfigError: exit 2, naming the layer
  if (flags().json) fmt::print("{}\n", model_summary_json(model, flags().batch).dump(2));
  else fmt::print("{}", model_summary_text(model, flags().batch));
  return 0;
}

[[maybe_unused]] const bool registered =
    register_command({"model", "show a model's layers, parameters, all-reduce size and memory", 25, add_model_options,
                      run_model});

}  // namespace
}  // namespace mb::cli
