#include "jit/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <optional>

#include "core/error.hpp"
#include "core/json_util.hpp"

extern char** environ;

namespace hcwarm::jit {
namespace {

using Clock = std::chrono::steady_clock;

// Milliseconds left until deadline for poll(2): -1 without one, at least 0.
int poll_ms(const std::optional<Clock::time_point>& deadline) {
  if (!deadline) return -1;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()).count();
  return static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left, 1 << 30)));
}

}  // namespace

std::string command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    out += a.find_first_of(" \t\"'") == std::string::npos && !a.empty() ? a : quoted_excerpt(a);
  }
  return out;
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& cwd, double timeout_s) {
  HCWARM_ASSERT(!argv.empty(), "run_process: empty argv");
  int pipefd[2];
  HCWARM_CHECK_SYS(::pipe2(pipefd, O_CLOEXEC), "pipe2");

  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  // Its own process group, so that a timeout also stops what it started (cc1plus, as, ld).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, cargv[0], &fa, &attr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(pipefd[1]);
  if (rc != 0) {
    ::close(pipefd[0]);
    HCWARM_THROW(ErrorKind::Unavailable, "cannot run {}: {}", quoted_excerpt(argv[0]), errno_string(rc));
  }

  std::optional<Clock::time_point> deadline;
  if (timeout_s > 0) {
    deadline = Clock::now() + std::chrono::microseconds(static_cast<int64_t>(std::llround(timeout_s * 1e6)));
  }
  ProcessResult r;
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    pollfd p{pipefd[0], POLLIN, 0};
    const int n = ::poll(&p, 1, poll_ms(deadline));
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (n == 0) {
      timed_out = true;
      break;
    }
    const ssize_t got = ::read(pipefd[0], buf, sizeof buf);
    if (got < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (got == 0) break;
    r.output.append(buf, static_cast<size_t>(got));
  }
  ::close(pipefd[0]);
  int status = 0;
  for (;;) {
    if (timed_out) ::kill(-pid, SIGKILL);
    const pid_t w = ::waitpid(pid, &status, timed_out || !deadline ? 0 : WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) HCWARM_THROW(ErrorKind::System, "waitpid: {}", errno_string(errno));
    if (w == 0) {
      // Output closed but still running: wait out the rest of the deadline.
      if (Clock::now() >= *deadline) {
        timed_out = true;
      } else {
        ::usleep(1000);
      }
    }
  }
  if (timed_out) {
    ::kill(-pid, SIGKILL);  // anything of the group still alive
    HCWARM_THROW_LOG(ErrorKind::Timeout, r.output, "{} did not finish within {} s and was killed: {}", argv[0],
                     timeout_s, command_line(argv));
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // posix_spawnp reports exec failures of some implementations as exit 127.
  if (r.exit_code == 127 && r.output.empty()) {
    HCWARM_THROW(ErrorKind::Unavailable, "cannot run {}: exit code 127 (not found?)", quoted_excerpt(argv[0]));
  }
  return r;
}

}  // namespace hcwarm::jit
