#pragma once
// Helpers shared by the test binaries.
#include <spdlog/spdlog.h>

#include <cstdint>
#include <memory>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/bf16.hpp"
#include "core/tensor.hpp"

namespace hcwarm::test {

// A fresh directory under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "hcwarm-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Inputs of one hc_pre call, drawn as models see them: residual ~ N(0, residual_std)
// rounded to bf16, fn ~ 1e-3 N(0,1), scale and base ~ 0.1 N(0,1), norm weight ~ 1 + 0.1 N(0,1).
struct HcPreInputs {
  HostTensor<bf16> residual;
  HostTensor<float> fn;
  HostTensor<float> scale;
  HostTensor<float> base;
  HostTensor<bf16> norm_weight;
};
HcPreInputs random_hc_pre_inputs(int64_t tokens, int hc, int hidden, uint64_t seed, float residual_std = 1.0f);

// Result of running the hcwarm CLI as a child process.
struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
  long max_rss_kb = 0;  // the child's peak resident set (wait4's rusage)
};
// Runs the built `hcwarm` with args (no shell); env entries "K=V" are added to the environment.
CliResult run_cli(const std::vector<std::string>& args, const std::vector<std::string>& env = {});

// A null-terminated char* array over `strings` (which must outlive it), for posix_spawn's argv and envp.
std::vector<char*> c_array(std::vector<std::string>& strings);

std::string read_file(const std::filesystem::path& p);
// Creates missing parent directories.
void write_file(const std::filesystem::path& p, const std::string& content);
// The names in directory p, sorted.
std::vector<std::string> dir_names(const std::filesystem::path& p);

// NVRTC 12.x from the nvidia-cuda-nvrtc-cu12 wheel in the project's .venv (scripts/setup.sh), or "".
std::string wheel_nvrtc12();

// Captures what hcwarm logs (its own logger, core/logging.hpp) while alive, at info level and above.
class LogCapture {
 public:
  LogCapture();
  ~LogCapture();
  int count(spdlog::level::level_enum level, const std::string& needle = {}) const;
  std::vector<std::string> messages(spdlog::level::level_enum level) const;

  struct Sink;

 private:
  std::shared_ptr<Sink> sink_;
  spdlog::level::level_enum old_level_;
};

}  // namespace hcwarm::test
