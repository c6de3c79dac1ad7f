// The names of hc_pre's enums (and of HcPreInput, declared in mhc_types.hpp).
#include "mhc/hc_pre_names.hpp"

#include "backends/cuda/cuda_driver.hpp"
#include "core/enum_names.hpp"
#include "core/error.hpp"
#include "mhc/mhc_types.hpp"

namespace hcwarm::mhc {

namespace {
constexpr EnumName<Backend> kBackendNames[] = {
    {Backend::Reference, "reference"}, {Backend::Cpu, "cpu"}, {Backend::Cuda, "cuda"}};
constexpr EnumName<Variant> kVariantNames[] = {{Variant::Specialized, "specialized"}, {Variant::Generic, "generic"}};
}  // namespace

Backend parse_backend(std::string_view name) { return parse_enum(kBackendNames, name, "backend"); }
const char* to_string(Backend b) { return enum_name(kBackendNames, b); }

Backend default_backend(const std::string& cuda_library) {
  return cuda::cuda_device_present(cuda_library) ? Backend::Cuda : Backend::Cpu;
}

Variant parse_variant(std::string_view name) { return parse_enum(kVariantNames, name, "variant"); }
const char* to_string(Variant v) { return enum_name(kVariantNames, v); }

const char* to_string(HcPreInput input) {
  return input == HcPreInput::Embed ? "embed" : input == HcPreInput::Post ? "post" : "residual";
}

HcPreInput parse_hc_pre_input(std::string_view name) {
  if (name.empty()) return HcPreInput::Residual;
  for (const HcPreInput i : {HcPreInput::Residual, HcPreInput::Embed, HcPreInput::Post}) {
    if (name == to_string(i)) return i;
  }
  HCWARM_THROW(ErrorKind::InvalidArgument, "unknown hc_pre input '{}' (residual, embed or post)", name);
}

}  // namespace hcwarm::mhc
