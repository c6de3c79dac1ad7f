#include "jit/kernel_spec.hpp"

#include "core/enum_names.hpp"

namespace hcwarm::jit {

namespace {
constexpr EnumName<TargetKind> kTargetNames[] = {{TargetKind::Host, "host"}, {TargetKind::Cuda, "cuda"}};
}  // namespace

const char* to_string(TargetKind kind) { return enum_name(kTargetNames, kind); }

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
