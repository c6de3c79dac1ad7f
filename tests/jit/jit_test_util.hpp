#pragma once
// Helpers for the JIT tests: tiny self-contained kernels (a host TU including an
// embedded-style header, a CUDA kernel), options, a log capture, and running
// this test binary again as a child process ("child mode", see jit_child_test.cpp).
#include <gtest/gtest.h>
#include <sys/types.h>

#include <filesystem>
#include <initializer_list>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/test_util.hpp"
#include "core/embedded_files.hpp"
#include "core/error.hpp"
#include "jit/jit_runtime.hpp"

namespace hcwarm::jit::test {

// Headers handed to the runtime as JitOptions::headers: "answer.hpp" includes
// "detail/base.hpp"; "unused.hpp" is included by nobody.
std::span<const EmbeddedFile> test_headers();
// The same with base.hpp's text changed (its value changes by `delta`).
std::span<const EmbeddedFile> test_headers_changed_base();

// A host kernel: extern "C" int answer() returning base (100) + value.
KernelSpec host_spec(int value, const std::string& family = "answer");
// The same kernel with ~0.3 s of constant evaluation added to its compile.
KernelSpec slow_host_spec(int value);
int call_answer(const LoadedModule& m);
// A CUDA kernel for NVRTC.
KernelSpec cuda_spec(int value, const std::string& arch = "sm_90a");
// True when NVRTC can be opened here.
bool nvrtc_available();

JitOptions options(std::optional<std::filesystem::path> cache_dir);
// The entry directory of host_spec(value) in the cache at `cache` (empty when absent).
std::filesystem::path entry_dir_of(const std::filesystem::path& cache, int value);
// Gives p and everything below it to uid (as root; links themselves, not followed).
void chown_tree(const std::filesystem::path& p, uid_t uid);
// Compiles host_spec(v) for each value into the cache at `cache`.
void populate_cache(const std::filesystem::path& cache, std::initializer_list<int> values);

using hcwarm::test::LogCapture;
using hcwarm::test::read_file;
using hcwarm::test::run_cli;
using hcwarm::test::TempDir;
using hcwarm::test::write_file;
namespace fs = std::filesystem;

// A test with a scratch directory and a kernel cache below it (made on first use).
class CacheFixture : public ::testing::Test {
 protected:
  TempDir dir_{"hcwarm-jit-cache"};
  fs::path cache() const { return dir_.path() / "cache"; }
  fs::path entry_of(int v) const { return entry_dir_of(cache(), v); }
  void populate(std::initializer_list<int> values) const { populate_cache(cache(), values); }
};

// Starts this test binary as a child in `mode` (env HCWARM_JIT_CHILD=mode plus
// `env` entries), stdout/stderr to `log_file`. Returns its pid.
pid_t spawn_child(const std::string& mode, const std::map<std::string, std::string>& env,
                  const std::filesystem::path& log_file);
// waitpid; returns the exit code, or 128 + signal.
int wait_child(pid_t pid);

}  // namespace hcwarm::jit::test
