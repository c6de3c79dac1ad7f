#pragma once
// The CUDA targets hcwarm compiles for, in one table: what has run, what
// compiles but has not run, and what is refused, with why; and which targets
// take the kernels' portable forms. Read by the NVRTC
// compiler (no kernel is compiled for a refused target), the hc_pre op (a
// refused device fails at construction, naming itself), `hcwarm info` and the
// README's matrix.
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace hcwarm::jit {

enum class GpuSupport {
  Ran,          // the GPU suite and the benchmarks ran on this architecture
  CompilesOnly, // every kernel family compiles for it (CI, no GPU); never run
  Refused,      // the kernels need what it lacks
};
const char* to_string(GpuSupport s);  // "ran" | "compiles, not run" | "refused"

struct GpuArchRow {
  int cc_major = 0;      // compute capability major; minor is every minor of it unless stated
  const char* arches;    // the targets, e.g. "sm_90a"
  const char* gpus;      // the parts, e.g. "H100, H200, GH200"
  GpuSupport support;
  const char* note;      // what ran, or what is missing
};

// The matrix, newest architecture first.
std::span<const GpuArchRow> gpu_matrix();

// "sm_90a" -> {9, 0}, "sm_120" -> {12, 0}, "sm_103a" -> {10, 3}; nullopt when unreadable.
std::optional<std::pair<int, int>> parse_cuda_arch(std::string_view arch);

// The row of a compute capability (majors below the oldest row: Refused).
GpuSupport gpu_support(int cc_major);
// One line for messages and `hcwarm info`: "sm_90a: ran (H200: ...)".
std::string describe_gpu_support(int cc_major, int cc_minor);

// Whether a target of this compute capability major takes the portable kernel
// forms (below sm_90: no thread-block clusters, TMA or programmatic dependent
// launch): the split-K pair at every token count, the cluster-free head, plain
// launches. The one-pass kernel and the cluster head need sm_90.
bool cuda_portable_target(int cc_major);
// The same for a target name; an unreadable one is not portable (require_supported_cuda_arch refuses it).
bool cuda_portable_target(std::string_view arch);
// Whether an SM of this compute capability major has 228 KB of shared memory (Hopper and
// datacenter Blackwell; cc 12 has 100 KB): what the one-pass kernel's block and two of the
// one-wave pair's partial blocks per SM need. An unreadable target name has not.
bool cuda_large_smem_target(int cc_major);
bool cuda_large_smem_target(std::string_view arch);

// Throws ErrorKind::Unavailable when the target is refused (or unreadable:
// InvalidArgument), naming it, what the kernels need and the oldest target
// they are built for. `what` says who asked ("NVRTC target", "GPU NVIDIA A100").
void require_supported_cuda_arch(std::string_view arch, std::string_view what);

}  // namespace hcwarm::jit
