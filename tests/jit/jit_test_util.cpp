#include "jit_test_util.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "common/test_util.hpp"
#include "jit/disk_cache.hpp"

extern char** environ;

namespace hcwarm::jit::test {

namespace {
const EmbeddedFile kHeaders[] = {
    {"answer.hpp", "#pragma once\n#include \"detail/base.hpp\"\nstatic inline int answer_base() { return kBase; }\n"},
    {"detail/base.hpp", "#pragma once\nstatic const int kBase = 100;\n"},
    {"unused.hpp", "#pragma once\nstatic const int kUnused = 1;\n"},
};
const EmbeddedFile kHeadersChanged[] = {
    {"answer.hpp", "#pragma once\n#include \"detail/base.hpp\"\nstatic inline int answer_base() { return kBase; }\n"},
    {"detail/base.hpp", "#pragma once\nstatic const int kBase = 200;\n"},
    {"unused.hpp", "#pragma once\nstatic const int kUnused = 1;\n"},
};
}  // namespace

std::span<const EmbeddedFile> test_headers() { return kHeaders; }
std::span<const EmbeddedFile> test_headers_changed_base() { return kHeadersChanged; }

KernelSpec host_spec(int value, const std::string& family) {
  KernelSpec s;
  s.family = family;
  s.params = {{"value", std::to_string(value)}};
  s.source = "#include \"answer.hpp\"\nextern \"C\" int answer() { return answer_base() + " + std::to_string(value) +
             "; }\n";
  s.target = TargetKind::Host;
  return s;
}

KernelSpec slow_host_spec(int value) {
  KernelSpec s = host_spec(value, "answer_slow");
  s.source += "constexpr unsigned spin() { unsigned x = 0; for (unsigned i = 0; i < 120; ++i)\n"
              "  for (unsigned j = 0; j < 1000; ++j) x = x * 31u + i + j; return x; }\n"
              "static_assert(spin() != 12345u);\n";
  return s;
}

int call_answer(const LoadedModule& m) { return reinterpret_cast<int (*)()>(m.function("answer"))(); }

KernelSpec cuda_spec(int value, const std::string& arch) {
  KernelSpec s;
  s.family = "cuda_fill";
  s.params = {{"value", std::to_string(value)}};
  s.source = "extern \"C\" __global__ void fill(int* out, int n) {\n"
             "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
             "  if (i < n) out[i] = " + std::to_string(value) + ";\n}\n";
  s.target = TargetKind::Cuda;
  s.arch = arch;
  return s;
}

bool nvrtc_available() {
  try {
    NvrtcCompiler c("sm_90a");
    return true;
  } catch (const Error&) {
    return false;
  }
}

JitOptions options(std::optional<std::filesystem::path> cache_dir) {
  JitOptions o;
  o.cache_dir = std::move(cache_dir);
  o.headers = test_headers();
  o.jobs = 2;
  return o;
}

std::filesystem::path entry_dir_of(const std::filesystem::path& cache, int value) {
  const auto k = JitRuntime(options(cache)).key(host_spec(value));
  for (const auto& e : DiskCache(cache).list())
    if (e.key == k) return e.dir;
  return {};
}

void chown_tree(const std::filesystem::path& p, uid_t uid) {
  ASSERT_EQ(::lchown(p.c_str(), uid, uid), 0) << p;
  for (const auto& e : std::filesystem::recursive_directory_iterator(p)) {
    ASSERT_EQ(::lchown(e.path().c_str(), uid, uid), 0) << e.path();
  }
}

void populate_cache(const std::filesystem::path& cache, std::initializer_list<int> values) {
  JitRuntime rt(options(cache));
  for (int v : values) rt.get(host_spec(v));
}


pid_t spawn_child(const std::string& mode, const std::map<std::string, std::string>& env,
                  const std::filesystem::path& log_file) {
  std::vector<std::string> args{"/proc/self/exe", "--gtest_filter=JitChild.Main", "--gtest_brief=1"};
  std::vector<char*> argv = hcwarm::test::c_array(args);
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv(*e);
    if (kv.rfind("HCWARM_JIT_", 0) == 0 || kv.rfind("GTEST_", 0) == 0) continue;
    env_s.push_back(kv);
  }
  env_s.push_back("HCWARM_JIT_CHILD=" + mode);
  for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
  std::vector<char*> envp = hcwarm::test::c_array(env_s);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("posix_spawn of the test binary failed");
  return pid;
}

int wait_child(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace hcwarm::jit::test
