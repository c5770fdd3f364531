// Model checkpoints as safetensors (https://github.com/huggingface/safetensors): an 8-byte
// little-endian header length, a JSON header {name: {dtype, shape, data_offsets}}, raw data.
// Tensor names and layouts are PyTorch's (model/model_shape.h: layers named in order, conv1,
// conv2, fc1, fc2 for the reference CNN), and the metadata's "model" holds the canonical text,
// so bench/check_checkpoint.py builds the same torch.nn net from the file alone and
//   model.load_state_dict(safetensors.torch.load_file(path))
// loads it strictly.
#pragma once
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/model_spec.h"

namespace mb {

// Writes all of `model`'s parameters (F32) with optional string metadata ("__metadata__"; its
// "model" is always the model's canonical text). Atomic. Error when the count is not the
// model's.
void save_checkpoint(const std::filesystem::path& file, const ModelSpec& model, std::span<const float> params,
                     std::map<std::string, std::string> metadata = {});

struct Checkpoint {
  ModelSpec model;
  std::vector<float> params;
};

// Reads a checkpoint written by save_checkpoint (or by PyTorch for the same model): the model
// from the metadata's "model" (files without it, as older versions wrote them: the reference
// family, its width from fc1.weight's rows). Throws DataError if a tensor is missing,
// mis-shaped, not F32, the model text is not one this version trains, or the file is corrupt.
Checkpoint load_checkpoint(const std::filesystem::path& file);

// The same checks on a checkpoint's bytes held in memory (the fuzz target's entry point);
// `name` stands for the file in messages.
Checkpoint load_checkpoint_bytes(std::string_view bytes, const std::string& name = "checkpoint");

}  // namespace mb
