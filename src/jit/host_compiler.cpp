#include <map>
#include <mutex>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "jit/compiler.hpp"
#include "jit/fs_util.hpp"
#include "jit/process.hpp"

namespace hcwarm::jit {
namespace fs = std::filesystem;

std::string detect_host_isa() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool v2 = __builtin_cpu_supports("sse3") && __builtin_cpu_supports("ssse3") &&
                  __builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("sse4.2") &&
                  __builtin_cpu_supports("popcnt");
  const bool v3 = v2 && __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") &&
                  __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("fma");
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512vl");
  if (v4) return "x86-64-v4";
  if (v3) return "x86-64-v3";
  if (v2) return "x86-64-v2";
  return "x86-64";
#elif defined(__aarch64__)
  return "native-aarch64";
#else
  return "native-unknown";
#endif
}

void write_headers(const fs::path& dir, std::span<const EmbeddedFile> headers) {
  fsu::make_dirs(dir);
  for (const auto& h : headers) {
    const fs::path rel(std::string(h.path));
    bool bad = rel.empty() || rel.is_absolute();
    for (const auto& part : rel) bad = bad || part == "..";
    HCWARM_CHECK_ARG(!bad, "kernel header path {} must be relative and stay inside the include dir",
                     quoted_excerpt(h.path));
    const fs::path p = dir / rel;
    fsu::make_dirs(p.parent_path());
    fsu::write_file(p, h.content);  // duplicates: the last one wins, as in the key
  }
}

namespace {

// "<first line of --version without the program name> <target triple>", probed once per compiler.
std::string probe_identity(const std::string& cxx, double timeout_s) {
  static std::mutex mu;
  static std::map<std::string, std::string> cache;
  std::lock_guard lock(mu);
  if (auto it = cache.find(cxx); it != cache.end()) return it->second;

  const auto ver = run_process({cxx, "--version"}, {}, timeout_s);
  if (ver.exit_code != 0) {
    HCWARM_THROW_LOG(ErrorKind::Unavailable, ver.output, "host compiler {} --version failed (exit {})", quoted_excerpt(cxx),
                     ver.exit_code);
  }
  std::string line = ver.output.substr(0, ver.output.find('\n'));
  // GCC prints the name it was invoked as ("c++ (Debian 12.2.0-14) 12.2.0"): drop it,
  // so "c++", "g++" and "/usr/bin/g++" give one identity.
  const std::string base = fs::path(cxx).filename().string();
  if (line.rfind(base + " ", 0) == 0) line = line.substr(base.size() + 1);
  const auto mach = run_process({cxx, "-dumpmachine"}, {}, timeout_s);
  std::string triple = mach.exit_code == 0 ? mach.output.substr(0, mach.output.find('\n')) : "unknown-triple";
  std::string id = fmt::format("host-cxx {} {}", line, triple);
  cache.emplace(cxx, id);
  return id;
}

}  // namespace

HostCompiler::HostCompiler(std::string cxx, std::string isa, std::vector<std::string> extra_flags, double timeout_s)
    : cxx_(std::move(cxx)),
      isa_(isa.empty() ? detect_host_isa() : std::move(isa)),
      extra_(std::move(extra_flags)),
      timeout_s_(timeout_s) {
  HCWARM_CHECK_ARG(!cxx_.empty(), "host compiler name is empty");
  identity_ = probe_identity(cxx_, timeout_s_);
}

std::vector<std::string> HostCompiler::flags() const {
  std::vector<std::string> f{"-O3"};
  if (isa_.rfind("native-", 0) != 0) f.push_back("-march=" + isa_);
  for (const char* s : {"-std=c++20", "-shared", "-fPIC"}) f.emplace_back(s);
  f.insert(f.end(), extra_.begin(), extra_.end());
  return f;
}

CompileOutput HostCompiler::compile(const KernelSource& source, std::span<const EmbeddedFile> headers,
                                    const fs::path& workdir) const {
  HCWARM_CHECK_ARG(source.parts == 1, "the host compiler builds one shared object per source, not {} parts",
                   source.parts);
  // Host kernels export extern "C" symbols: nothing is instantiated by name.
  HCWARM_CHECK_ARG(source.entries.empty(), "the host compiler takes no kernel entries (got {}, the first {})",
                   source.entries.size(), source.entries.empty() ? "" : source.entries.front().expression);
  write_headers(workdir / "include", headers);
  fsu::write_file(workdir / "kernel.cpp", source.text);
  // Relative paths with the compiler's cwd in workdir: nothing in the output names
  // where the cache lives.
  std::vector<std::string> argv{cxx_};
  for (auto& f : flags()) argv.push_back(std::move(f));
  for (const char* s : {"-Iinclude", "kernel.cpp", "-o", "kernel.so"}) argv.emplace_back(s);
  auto r = run_process(argv, workdir.string(), timeout_s_);
  if (r.exit_code != 0) {
    HCWARM_THROW_LOG(ErrorKind::Compile, r.output, "host compiler {} failed (exit {})", cxx_, r.exit_code);
  }
  auto bytes = fsu::read_file(workdir / "kernel.so");
  if (!bytes || bytes->empty()) {
    HCWARM_THROW_LOG(ErrorKind::Compile, r.output, "host compiler {} produced no kernel.so", cxx_);
  }
  return {std::move(*bytes), std::move(r.output)};
}

}  // namespace hcwarm::jit
