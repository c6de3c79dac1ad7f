#pragma once
// hc_pre's option enums and their names (the CLI's --backend / --variant, the
// Python bindings, JSON output), and the backend a machine runs by default.
#include <string>
#include <string_view>

namespace hcwarm::mhc {

enum class Backend { Reference, Cpu, Cuda };
Backend parse_backend(std::string_view name);  // "reference" | "cpu" | "cuda"; else InvalidArgument
const char* to_string(Backend b);
// Cuda when a CUDA device is present (the driver opened from cuda_library, or
// libcuda.so.1), else Cpu. Never throws.
Backend default_backend(const std::string& cuda_library = {});

enum class Variant { Specialized, Generic };
Variant parse_variant(std::string_view name);  // "specialized" | "generic"
const char* to_string(Variant v);

}  // namespace hcwarm::mhc
