#pragma once
// The two JIT compilers behind one interface. A Compiler is bound to one target
// (an NVRTC architecture such as "sm_90a", or a host ISA level such as
// "x86-64-v3"); everything that decides the bytes it produces (identity with
// version, flags, target) is exposed so the runtime can hash it into the key.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/embedded_files.hpp"
#include "core/thread_budget.hpp"
#include "jit/kernel_spec.hpp"
#include "jit/nvrtc_library.hpp"

namespace hcwarm::jit {

struct CompileOutput {
  std::vector<std::byte> binary;  // cubin, or the shared object's bytes
  std::string log;                // the compiler's messages (warnings), possibly empty
};

class Compiler {
 public:
  virtual ~Compiler() = default;
  virtual TargetKind kind() const = 0;
  // Compiler name and full version, with no install path: "nvrtc 13.0 (109338064 bytes)",
  // "host-cxx (Debian 12.2.0-14+deb12u1) 12.2.0 x86_64-linux-gnu".
  virtual std::string identity() const = 0;
  // "sm_90a" / "x86-64-v3".
  virtual std::string target() const = 0;
  // Every option that changes the output, without paths (include dirs are private).
  virtual std::vector<std::string> flags() const = 0;
  // File name of the artifact in a cache entry: "kernel.cubin" / "kernel.so".
  virtual std::string artifact_name() const = 0;
  // Compiles `source`: its text, which holds `parts` independent kernels, and
  // the kernels to instantiate by name (KernelSource; the host compiler takes
  // 1 part and no entries), with `headers` includable by their relative
  // paths. `workdir` is a private, existing, empty directory the compiler may
  // write into. Throws ErrorKind::Compile with the log on failure (the runtime
  // adds the key), ErrorKind::InvalidArgument for a parts count out of range,
  // an entry's part out of range, or entries given to the host compiler.
  virtual CompileOutput compile(const KernelSource& source, std::span<const EmbeddedFile> headers,
                                const std::filesystem::path& workdir) const = 0;
};

// The best x86-64 micro-architecture level this CPU supports: "x86-64-v4",
// "x86-64-v3", "x86-64-v2" or "x86-64"; on other CPUs, "native-<arch>" with no -march.
std::string detect_host_isa();

// The host C++ compiler (HCWARM_CXX, default "c++"), spawned with posix_spawnp:
//   <cxx> -O3 -march=<isa> -std=c++20 -shared -fPIC [extra...] -I<workdir>/include kernel.cpp -o kernel.so
// The generated shared object exports the source's extern "C" symbols (no entries).
class HostCompiler final : public Compiler {
 public:
  // isa: "" = detect_host_isa(). Probes `<cxx> --version` and `-dumpmachine` once;
  // throws ErrorKind::Unavailable when the compiler cannot be run.
  // timeout_s: longest run of one compile (and of each probe); 0 = none.
  HostCompiler(std::string cxx, std::string isa = {}, std::vector<std::string> extra_flags = {},
               double timeout_s = 0);
  TargetKind kind() const override { return TargetKind::Host; }
  std::string identity() const override { return identity_; }
  std::string target() const override { return isa_; }
  std::vector<std::string> flags() const override;
  std::string artifact_name() const override { return "kernel.so"; }
  CompileOutput compile(const KernelSource& source, std::span<const EmbeddedFile> headers,
                        const std::filesystem::path& workdir) const override;

 private:
  std::string cxx_, isa_, identity_;
  std::vector<std::string> extra_;
  double timeout_s_ = 0;
};

// NVRTC 12.4 or newer (12.x or 13.x), opened with dlopen (never linked), found as
// jit/nvrtc_library.hpp says: `library` alone when given (HCWARM_NVRTC_LIBRARY),
// else $CUDA_HOME/lib64 (cuda_home), /usr/local/cuda/lib64, NVIDIA's pip wheels in
// the running Python's site-packages (PythonEnv::process()), then the loader's path.
// Throws ErrorKind::Unavailable naming what was tried and why each was skipped
// (an older NVRTC is refused by its nvrtcVersion).
// Options: --gpu-architecture=<arch> -std=c++20 --minimal [extra...] -I<workdir>/include [include_dirs...].
class NvrtcCompiler final : public Compiler {
 public:
  // budget: the compile threads a multi-part compile may add to its caller's;
  // null: a budget of its own, the hardware threads but one.
  NvrtcCompiler(std::string arch, std::string library = {}, std::vector<std::string> extra_flags = {},
                std::vector<std::filesystem::path> include_dirs = {}, std::string cuda_home = {},
                std::shared_ptr<ThreadBudget> budget = nullptr);
  // The same with the search spelled out (NvrtcSearch::standard, or a test's own).
  NvrtcCompiler(std::string arch, const NvrtcSearch& search, std::vector<std::string> extra_flags = {},
                std::vector<std::filesystem::path> include_dirs = {}, std::shared_ptr<ThreadBudget> budget = nullptr);
  TargetKind kind() const override { return TargetKind::Cuda; }
  std::string identity() const override { return identity_; }
  std::string target() const override { return arch_; }
  std::vector<std::string> flags() const override;
  std::string artifact_name() const override { return "kernel.cubin"; }
  // A cubin; for a source of several parts (jit/cubin_set.hpp), the parts
  // compiled in parallel and packed as a cubin set when the budget has a
  // thread for every part but the caller's, else one program, one cubin (the
  // same kernels either way). Each program instantiates its part's entries by
  // name (nvrtcAddNameExpression; every entry when the source is one program)
  // and checks NVRTC's lowered name against each entry's symbol:
  // ErrorKind::Internal naming both where they differ (a wrong mangling).
  CompileOutput compile(const KernelSource& source, std::span<const EmbeddedFile> headers,
                        const std::filesystem::path& workdir) const override;
  // The shared library that was opened (for messages): the candidate as tried,
  // a path or, from the loader's path, a bare name.
  const std::string& library_path() const;
  // nvrtcVersion's major and minor.
  int major_version() const;
  int minor_version() const;
  // The candidates the search tried before the one it took, each with why it was skipped.
  const std::vector<NvrtcSkipped>& skipped() const { return skipped_; }

  struct Api;  // the resolved NVRTC entry points (process-wide, loaded once per path)

 private:
  // One NVRTC program of `source`'s text with `opts`, instantiating the entries of
  // `part` (-1: every entry).
  CompileOutput compile_program(const KernelSource& source, const std::vector<std::string>& opts, int part) const;

  std::string arch_, identity_;
  std::vector<std::string> extra_;
  std::vector<std::filesystem::path> include_dirs_;
  const Api* api_ = nullptr;
  std::vector<NvrtcSkipped> skipped_;
  std::shared_ptr<ThreadBudget> budget_;
};

// Writes headers under dir (creating subdirectories); rejects absolute paths and "..".
void write_headers(const std::filesystem::path& dir, std::span<const EmbeddedFile> headers);

}  // namespace hcwarm::jit
