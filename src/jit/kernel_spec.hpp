#pragma once
// What a caller asks the JIT runtime for: a kernel family specialized by a few
// parameters, as generated source. The runtime turns it into a key (adding the
// compiler identity, flags, target and the text of every included header),
// then compiles or loads it exactly once.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hcwarm::jit {

enum class TargetKind {
  Host,  // the host C++ compiler -> shared object -> dlopen
  Cuda,  // NVRTC -> cubin for `arch` -> cuModuleLoadData
};

const char* to_string(TargetKind kind);

struct KernelSpec {
  std::string family;                                       // e.g. "mhc_pre"
  std::vector<std::pair<std::string, std::string>> params;  // ordered, e.g. {"num_splits", "16"}
  std::string source;      // the generated translation unit; includes embedded kernel headers by relative path
  TargetKind target = TargetKind::Host;
  std::string arch;        // Cuda: "sm_90a"; Host: empty means the runtime's host ISA

  // The value of parameter `name`, or "" when the spec has none.
  std::string_view param(std::string_view name) const;
  // "mhc_pre[num_splits=16,hc=4,hidden=7168,norm=1]@sm_90a": for logs and reports.
  std::string describe() const;
};

}  // namespace hcwarm::jit
