#pragma once
// NumPy .npy files: the format users exchange tensors with hcwarm in. Only
// little-endian, C-order float32 is accepted; anything else is a clear error
// naming the file (ErrorKind::InvalidArgument).
#include <filesystem>
#include <string>
#include <string_view>

#include "core/tensor.hpp"

namespace hcwarm {

HostTensor<float> read_npy_f32(const std::filesystem::path& path);
// The same on a file's bytes already in memory; `source` names them in errors.
HostTensor<float> decode_npy_f32(std::string_view bytes, const std::string& source);

// Serializes a float32 array as .npy (format 1.0) into bytes.
std::string encode_npy_f32(const HostTensor<float>& t);
void write_npy_f32(const std::filesystem::path& path, const HostTensor<float>& t);

}  // namespace hcwarm
