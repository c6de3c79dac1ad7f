#pragma once
// Runs a program with posix_spawnp (no shell), capturing stdout and stderr
// together. Used for the host compiler and its version probe.
#include <string>
#include <vector>

namespace hcwarm::jit {

struct ProcessResult {
  int exit_code = -1;   // 128 + signal when killed by a signal
  std::string output;   // stdout and stderr, interleaved as written
};

// cwd: working directory of the child ("" = ours). timeout_s > 0: when the child
// (with everything it started: it runs in its own process group) has not exited
// by then, the group is killed and ErrorKind::Timeout names the command.
// argv[0] is looked up in PATH when it has no '/'. Throws ErrorKind::Unavailable
// when the program cannot be started (not found, not executable).
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& cwd = {}, double timeout_s = 0);

// argv as one line for messages: words with spaces or quotes are quoted.
std::string command_line(const std::vector<std::string>& argv);

}  // namespace hcwarm::jit
