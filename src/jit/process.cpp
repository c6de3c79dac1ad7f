#include "jit/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>

#include "core/bounded_text.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/limits.hpp"
#include "core/unique_fd.hpp"

extern char** environ;

namespace hcwarm::jit {
namespace {

using Clock = std::chrono::steady_clock;

// Without a pidfd, how often the loop looks whether the child has exited.
constexpr int kExitPollMs = 10;
// The most read at one look at the pipe: one capture's worth.
constexpr size_t kDrainBytes = limits::kMaxProcessOutputHead + limits::kMaxProcessOutputTail;

// Milliseconds left until deadline for poll(2): -1 without one, at least 0.
int poll_ms(const std::optional<Clock::time_point>& deadline) {
  if (!deadline) return -1;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()).count();
  return static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left, 1 << 30)));
}

// A descriptor poll(2) reports readable once the child exits (Linux 5.3+), or -1:
// the loop then looks every kExitPollMs.
int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

// True once the child has exited. WNOWAIT leaves it a zombie, so that its pid, the
// id of its process group, cannot be reused before the rest of the group is killed.
bool has_exited(pid_t pid) {
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0) return info.si_pid == pid;
    if (errno != EINTR) HCWARM_THROW(ErrorKind::System, "waitid: {}", errno_string(errno));
  }
}

// Reads what the (non-blocking) pipe holds now, at most `limit` bytes (a writer as
// fast as the reader would keep it here); false at end of file or on an error.
bool drain(int fd, HeadTailBuffer& out, size_t limit) {
  char buf[16384];
  size_t got_total = 0;
  while (got_total < limit) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got > 0) {
      out.append(std::string_view(buf, static_cast<size_t>(got)));
      got_total += static_cast<size_t>(got);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    return got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
  return true;
}

int reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) HCWARM_THROW(ErrorKind::System, "waitpid: {}", errno_string(errno));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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

  UniqueFd out_fd(pipefd[0]);
  ::fcntl(out_fd.get(), F_SETFL, ::fcntl(out_fd.get(), F_GETFL) | O_NONBLOCK);
  const UniqueFd pidfd(open_pidfd(pid));

  std::optional<Clock::time_point> deadline;
  if (timeout_s > 0) {
    deadline = Clock::now() + std::chrono::microseconds(static_cast<int64_t>(std::llround(timeout_s * 1e6)));
  }
  HeadTailBuffer output(limits::kMaxProcessOutputHead, limits::kMaxProcessOutputTail);
  bool reading = true;
  bool timed_out = false;
  // Until the child exits, not until its output closes: a background process it
  // left behind (a compiler cache's server) may hold the pipe open for good.
  while (!has_exited(pid)) {
    if (deadline && Clock::now() >= *deadline) {
      timed_out = true;
      break;
    }
    int wait_ms = poll_ms(deadline);
    if (pidfd.get() < 0) wait_ms = wait_ms < 0 ? kExitPollMs : std::min(wait_ms, kExitPollMs);
    pollfd fds[2] = {{out_fd.get(), POLLIN, 0}, {pidfd.get(), POLLIN, 0}};
    if (!reading) fds[0].fd = -1;  // poll(2) skips negative descriptors
    const int n = ::poll(fds, 2, wait_ms);
    if (n < 0 && errno != EINTR) HCWARM_THROW(ErrorKind::System, "poll: {}", errno_string(errno));
    if (n > 0 && reading && fds[0].revents != 0) reading = drain(out_fd.get(), output, kDrainBytes);
  }
  // The rest of its process group (cc1plus, as, ld are done by now; anything it
  // left running is not), then what the pipe still holds, then the child itself.
  ::kill(-pid, SIGKILL);
  if (reading && !timed_out) drain(out_fd.get(), output, kDrainBytes);
  ProcessResult r;
  r.exit_code = reap(pid);
  r.output = output.str();
  r.output_dropped = output.dropped();
  if (timed_out) {
    HCWARM_THROW_LOG(ErrorKind::Timeout, r.output, "{} did not finish within {} s and was killed: {}", argv[0],
                     timeout_s, command_line(argv));
  }
  // posix_spawnp reports exec failures of some implementations as exit 127.
  if (r.exit_code == 127 && r.output.empty()) {
    HCWARM_THROW(ErrorKind::Unavailable, "cannot run {}: exit code 127 (not found?)", quoted_excerpt(argv[0]));
  }
  return r;
}

}  // namespace hcwarm::jit
