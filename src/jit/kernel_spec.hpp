#pragma once
// What a caller asks the JIT runtime for: a kernel family specialized by a few
// parameters, as generated source. The runtime turns it into a key (adding the
// compiler identity, flags, target and the text of every included header),
// then compiles or loads it exactly once.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jit/kernel_entry.hpp"

namespace hcwarm::jit {

enum class TargetKind {
  Host,  // the host C++ compiler -> shared object -> dlopen
  Cuda,  // NVRTC -> cubin for `arch` -> cuModuleLoadData
};

const char* to_string(TargetKind kind);

// Independent kernels one CUDA source may hold (jit/cubin_set.hpp).
inline constexpr int kMaxSourceParts = 8;

// A generated translation unit: its text, the independent kernels it holds,
// each under `#if !defined(HCWARM_PART) || HCWARM_PART == i` (1 to
// kMaxSourceParts), and, for CUDA, the kernels NVRTC instantiates by name
// (each with its part; the text holds only includes). NVRTC may compile the
// parts as separate programs in parallel (jit/cubin_set.hpp); 1: one program,
// no guards needed. The host compiler takes no entries (extern "C" symbols).
struct KernelSource {
  std::string text;
  int parts = 1;
  std::vector<KernelEntry> entries;
  bool operator==(const KernelSource&) const = default;
};

struct KernelSpec {
  std::string family;                                       // e.g. "mhc_pre"
  std::vector<std::pair<std::string, std::string>> params;  // ordered, e.g. {"num_splits", "16"}
  std::string source;      // the generated translation unit; includes embedded kernel headers by relative path
  TargetKind target = TargetKind::Host;
  std::string arch;        // Cuda: "sm_90a"; Host: empty means the runtime's host ISA
  int parts = 1;           // the source's independent kernels (KernelSource::parts)
  std::vector<KernelEntry> entries;  // the kernels NVRTC instantiates by name (KernelSource::entries)

  void set_source(KernelSource s) {
    source = std::move(s.text);
    parts = s.parts;
    entries = std::move(s.entries);
  }
  // What the compiler takes (a copy of the text, parts and entries).
  KernelSource kernel_source() const { return {source, parts, entries}; }
  // The value of parameter `name`, or "" when the spec has none.
  std::string_view param(std::string_view name) const;
  // "mhc_pre[num_splits=16,hc=4,hidden=7168,norm=1]@sm_90a": for logs and reports.
  std::string describe() const;
};

}  // namespace hcwarm::jit
