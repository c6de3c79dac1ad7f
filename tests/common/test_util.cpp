#include "common/test_util.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/sinks/base_sink.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/logging.hpp"

extern char** environ;

namespace hcwarm::test {

TempDir::TempDir(const std::string& prefix) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  // Make everything writable again first: tests create read-only directories.
  for (auto it = std::filesystem::recursive_directory_iterator(path_, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
  }
  std::filesystem::permissions(path_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
  std::filesystem::remove_all(path_, ec);
}

HcPreInputs random_hc_pre_inputs(int64_t tokens, int hc, int hidden, uint64_t seed, float residual_std) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  const int64_t k = int64_t{hc} * hidden;
  const int64_t mix = int64_t{hc} * (2 + hc);
  HcPreInputs in{HostTensor<bf16>({tokens, hc, hidden}), HostTensor<float>({mix, k}), HostTensor<float>({3}),
                 HostTensor<float>({mix}), HostTensor<bf16>({hidden})};
  for (auto& v : in.residual.vec()) v = bf16::from_float(residual_std * n01(rng));
  for (auto& v : in.fn.vec()) v = 1e-3f * n01(rng);
  for (auto& v : in.scale.vec()) v = 0.1f * n01(rng);
  for (auto& v : in.base.vec()) v = 0.1f * n01(rng);
  for (auto& v : in.norm_weight.vec()) v = bf16::from_float(1.0f + 0.1f * n01(rng));
  return in;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> dir_names(const std::filesystem::path& p) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(p)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string wheel_nvrtc12() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::directory_iterator it(fs::path(HCWARM_SOURCE_DIR) / ".venv" / "lib", ec);
  if (ec) return {};
  for (const auto& e : it) {
    const fs::path lib = e.path() / "site-packages" / "nvidia" / "cuda_nvrtc" / "lib" / "libnvrtc.so.12";
    if (e.path().filename().string().starts_with("python") && fs::exists(lib, ec)) return lib.string();
  }
  return {};
}

std::vector<char*> c_array(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

void write_file(const std::filesystem::path& p, const std::string& content) {
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << content;
}

CliResult run_cli(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  TempDir io("hcwarm-cli");
  const std::string out_path = (io.path() / "stdout").string();
  const std::string err_path = (io.path() / "stderr").string();

  std::vector<std::string> argv_s{HCWARM_CLI_PATH};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv = c_array(argv_s);

  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e) env_s.emplace_back(*e);
  env_s.insert(env_s.end(), env.begin(), env.end());
  std::vector<char*> envp = c_array(env_s);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("posix_spawn of hcwarm failed");
  int status = 0;
  struct rusage ru {};
  wait4(pid, &status, 0, &ru);
  CliResult r;
  r.max_rss_kb = ru.ru_maxrss;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  return r;
}

struct LogCapture::Sink : spdlog::sinks::base_sink<std::mutex> {
  std::vector<std::pair<spdlog::level::level_enum, std::string>> msgs;
  mutable std::mutex read_mu;

 protected:
  void sink_it_(const spdlog::details::log_msg& m) override {
    std::lock_guard lock(read_mu);
    msgs.emplace_back(m.level, std::string(m.payload.data(), m.payload.size()));
  }
  void flush_() override {}
};

LogCapture::LogCapture() : sink_(std::make_shared<Sink>()) {
  auto logger = hcwarm::shared_logger();
  old_level_ = logger->level();
  logger->sinks().push_back(sink_);
  if (old_level_ > spdlog::level::info) logger->set_level(spdlog::level::info);
}

LogCapture::~LogCapture() {
  auto logger = hcwarm::shared_logger();
  auto& sinks = logger->sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  logger->set_level(old_level_);
}

int LogCapture::count(spdlog::level::level_enum level, const std::string& needle) const {
  std::lock_guard lock(sink_->read_mu);
  int n = 0;
  for (const auto& [l, s] : sink_->msgs) n += (l == level && s.find(needle) != std::string::npos);
  return n;
}

std::vector<std::string> LogCapture::messages(spdlog::level::level_enum level) const {
  std::lock_guard lock(sink_->read_mu);
  std::vector<std::string> out;
  for (const auto& [l, s] : sink_->msgs)
    if (l == level) out.push_back(s);
  return out;
}

}  // namespace hcwarm::test
