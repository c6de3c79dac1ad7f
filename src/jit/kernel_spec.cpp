#include "jit/kernel_spec.hpp"

namespace hcwarm::jit {

const char* to_string(TargetKind kind) {
  switch (kind) {
    case TargetKind::Host: return "host";
    case TargetKind::Cuda: return "cuda";
  }
  return "?";
}

std::string_view KernelSpec::param(std::string_view name) const {
  for (const auto& [k, v] : params) {
    if (k == name) return v;
  }
  return {};
}

std::string KernelSpec::describe() const {
  std::string s = family + "[";
  for (size_t i = 0; i < params.size(); ++i) {
    if (i) s += ",";
    s += params[i].first + "=" + params[i].second;
  }
  s += "]@";
  s += arch.empty() ? (target == TargetKind::Host ? "host" : "?") : arch;
  return s;
}

}  // namespace hcwarm::jit
