// Model checkpoints as safetensors (https://github.com/huggingface/safetensors): an 8-byte
// little-endian header length, a JSON header {name: {dtype, shape, data_offsets}}, raw data.
// Tensor names and layouts are PyTorch's (see model/cnn_spec.h), so
//   model.load_state_dict(safetensors.torch.load_file(path))
// works for the same model written in torch.nn (conv1, conv2, fc1, fc2).
#pragma once
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mb {

// Writes all parameters (F32) with optional string metadata ("__metadata__"). Atomic.
void save_checkpoint(const std::filesystem::path& file, std::span<const float> params,
                     const std::map<std::string, std::string>& metadata = {});

// Reads a checkpoint written by save_checkpoint (or by PyTorch for the same model).
// Throws DataError if a tensor is missing, mis-shaped, not F32, or the file is corrupt.
std::vector<float> load_checkpoint(const std::filesystem::path& file);

// The same checks on a checkpoint's bytes held in memory (the fuzz target's entry point);
// `name` stands for the file in messages.
std::vector<float> load_checkpoint_bytes(std::string_view bytes, const std::string& name = "checkpoint");

}  // namespace mb
