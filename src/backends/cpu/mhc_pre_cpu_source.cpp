// The generated translation unit of one CPU mhc_pre specialization.
#include <fmt/format.h>

#include "backends/cpu/mhc_pre_cpu.hpp"
#include "core/error.hpp"

namespace hcwarm::cpu {

namespace {

// The input's name in the source's first line and its kernel constant.
struct InputNames {
  const char* name;
  const char* constant;
};

InputNames input_names(int input) {
  switch (input) {
    case hcwarm_mhc::kInputResidual: return {"residual", "hcwarm_mhc::kInputResidual"};
    case hcwarm_mhc::kInputEmbed: return {"embed", "hcwarm_mhc::kInputEmbed"};
    case hcwarm_mhc::kInputPost: return {"post", "hcwarm_mhc::kInputPost"};
    default: break;
  }
  HCWARM_THROW(ErrorKind::InvalidArgument, "bad mhc_pre input kind {} (a specialization takes residual, embed or post)",
               input);
}

}  // namespace

std::string mhc_pre_cpu_source(int num_splits, int hc, int hidden, bool fused_norm, int input) {
  HCWARM_CHECK_ARG(num_splits >= 1 && hc >= 1 && hidden >= 1, "bad mhc_pre specialization ({}, {}, {})", num_splits,
                   hc, hidden);
  const InputNames in = input_names(input);
  return fmt::format(
      "// mhc_pre CPU: num_splits={0} hc={1} hidden={2} norm={3} input={7}\n"
      "#include \"cpu/mhc_pre.hpp\"\n"
      "extern \"C\" int {4}(const hcwarm_mhc_pre_params* p, long long b, long long e) {{\n"
      "  return hcwarm_kernels::cpu::mhc_pre_partial<{0}, {1}, {2}, {8}>(p, b, e);\n}}\n"
      "extern \"C\" int {5}(const hcwarm_mhc_pre_params* p, long long b, long long e) {{\n"
      "  return hcwarm_kernels::cpu::mhc_pre_finish<{0}, {1}, {2}, {3}, {8}>(p, b, e);\n}}\n"
      "extern \"C\" int {6}() {{ return hcwarm_mhc::kPreAbi; }}\n",
      num_splits, hc, hidden, fused_norm ? "true" : "false", kCpuPartialSymbol, kCpuFinishSymbol, kCpuAbiSymbol,
      in.name, in.constant);
}

}  // namespace hcwarm::cpu
