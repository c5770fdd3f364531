// `mirrorbench-cli model SPEC|FILE`: a model's layers as Keras's model.summary() shows them,
// with what mirrored training adds (all-reduce bytes, FLOPs per image, memory per replica);
// --json for programs. A Keras file (keras/keras_model.h) is read first and what the import
// took as what is said above the table. An invalid spec or file exits 2 naming the layer and why.
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli_options.h"
#include "keras/keras_model.h"
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
                 "a preset (reference, dense:N, mlp, lenet5, cnn-cifar), layers joined by '-' (see --model), or a Keras "
                 "model file (model.to_json() output, a .keras file, a TensorFlow.js model.json)")
      ->required()
      ->type_name("SPEC");
  sub.add_option("--batch", flags().batch, "the per-replica batch the memory is given for (default 128)")
      ->transform(integer_in(1, 1 << 20))
      ->type_name("B");
  sub.add_flag("--json", flags().json, "write the table as JSON on standard output");
}

int run_model(const Options&) {
  // ConfigError or DataError: exit 2, naming the layer or the file.
  std::optional<KerasImport> keras;
  if (names_model_file(flags().spec)) keras = import_keras_file(flags().spec);
  const ModelSpec model = keras ? keras->model : model_from_text(flags().spec);
  if (flags().json) {
    nlohmann::json j = model_summary_json(model, flags().batch);
    if (keras)
      j["imported"] = {{"file", flags().spec}, {"format", keras->format}, {"name", keras->name}, {"notes", keras->notes}};
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  if (keras) {
    fmt::print("{}: {} '{}', read as {}\n", flags().spec, keras->format, keras->name, model_text(model));
    for (const std::string& note : keras->notes) fmt::print("  - {}\n", note);
    fmt::print("\n");
  }
  fmt::print("{}", model_summary_text(model, flags().batch));
  return 0;
}

[[maybe_unused]] const bool registered =
    register_command({"model", "show a model's layers, parameters, all-reduce size and memory", 25, add_model_options,
                      run_model});

}  // namespace
}  // namespace mb::cli
