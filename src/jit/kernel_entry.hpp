#pragma once
// The name of one CUDA kernel a JIT source holds: a __global__ template of the
// kernel headers, instantiated by NVRTC from its name expression
// (nvrtcAddNameExpression), and the Itanium-mangled symbol the module exports,
// which the launcher looks up. Both are written here from the same template
// arguments, so the source and the lookup cannot drift apart; NvrtcCompiler
// checks the symbol against NVRTC's lowered name.
#include <initializer_list>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace hcwarm::jit {

// A template argument: the kernels' template parameters are int or bool.
using KernelTemplateArg = std::variant<int, bool>;

struct KernelEntry {
  int part = 0;            // the source part that instantiates it (KernelSource::parts)
  std::string expression;  // "hcwarm_kernels::cuda::mhc_pre_partial_kernel<5, 4, 7168, 0, 128, 3>"
  std::string symbol;      // "_ZN14hcwarm_kernels4cuda22mhc_pre_partial_kernelILi5E...EEEv21hcwarm_mhc_pre_params"
  bool operator==(const KernelEntry&) const = default;
};

// The entry of template `name` in namespace `scope` (outermost first, e.g.
// {"hcwarm_kernels", "cuda"}; empty: the global namespace) with `args`.
// `mangled_params`: the mangling of the kernel's parameter list ("v" for
// none), substitutions included: they depend on the signature and the scope's
// depth only (literal template arguments add no substitution candidates), so
// each kernel writes its list once, next to its entry function. The void
// return type of a function template's mangling is added here.
KernelEntry kernel_entry(int part, std::initializer_list<std::string_view> scope, std::string_view name,
                         const std::vector<KernelTemplateArg>& args, std::string_view mangled_params);

}  // namespace hcwarm::jit
