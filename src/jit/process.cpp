#include "jit/process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "core/error.hpp"

extern char** environ;

namespace hcwarm::jit {

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& cwd) {
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
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, cargv[0], &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(pipefd[1]);
  if (rc != 0) {
    ::close(pipefd[0]);
    HCWARM_THROW(ErrorKind::Unavailable, "cannot run {:?}: {}", argv[0], errno_string(rc));
  }

  ProcessResult r;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(pipefd[0], buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (n == 0) break;
    r.output.append(buf, static_cast<size_t>(n));
  }
  ::close(pipefd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) HCWARM_THROW(ErrorKind::System, "waitpid: {}", errno_string(errno));
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // posix_spawnp reports exec failures of some implementations as exit 127.
  if (r.exit_code == 127 && r.output.empty()) {
    HCWARM_THROW(ErrorKind::Unavailable, "cannot run {:?}: exit code 127 (not found?)", argv[0]);
  }
  return r;
}

}  // namespace hcwarm::jit
