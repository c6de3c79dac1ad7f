#pragma once
// Runs a program with posix_spawnp (no shell), capturing stdout and stderr
// together. Used for the host compiler and its version probe.
#include <cstdint>
#include <string>
#include <vector>

namespace hcwarm::jit {

struct ProcessResult {
  int exit_code = -1;   // 128 + signal when killed by a signal
  // stdout and stderr, interleaved as written: the first and the last
  // limits::kMaxProcessOutput{Head,Tail} bytes, with a line between them saying
  // how many were dropped (output_dropped).
  std::string output;
  uint64_t output_dropped = 0;
};

// cwd: working directory of the child ("" = ours). The child runs in its own
// process group; run_process returns when the child exits, kills what is left of
// its group and stops reading (a background process it left holding the output
// open does not hold up the call). timeout_s > 0: when the child has not exited by
// then, the group is killed and ErrorKind::Timeout names the command (log: output).
// argv[0] is looked up in PATH when it has no '/'. Throws ErrorKind::Unavailable
// when the program cannot be started (not found, not executable).
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& cwd = {}, double timeout_s = 0);

// argv as one line for messages: words with spaces or quotes are quoted.
std::string command_line(const std::vector<std::string>& argv);

}  // namespace hcwarm::jit
