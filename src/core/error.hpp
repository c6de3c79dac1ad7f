#pragma once
// One exception type for the whole library. It carries where it was raised
// (file:line), a kind that the CLI maps to an exit code, and, for compile
// failures, the compiler's log.
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace hcwarm {

enum class ErrorKind {
  InvalidArgument,  // bad user input: shapes, values, files, options (CLI exit 2)
  Io,               // file system trouble that is not the user's input
  Compile,          // a JIT compile failed; log() holds the compiler's output
  Cuda,             // CUDA driver API
  Nvrtc,            // NVRTC API
  System,           // POSIX calls
  Unavailable,      // a backend or feature this machine does not have
  NotWarmed,        // a kernel a call needs is not loaded, and it may not be built or loaded now
                    // (inside CUDA-graph capture, or with HCWARM_JIT=off): warm it first
  Timeout,          // waited past a configured limit: another process's key lock, the host compiler
  Internal,         // a broken invariant: a bug in hcwarm
};

const char* to_string(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message, const char* file, int line, std::string log = {});

  ErrorKind kind() const noexcept { return kind_; }
  const char* file() const noexcept { return file_; }
  int line() const noexcept { return line_; }
  // The bare message, without the file:line prefix that what() carries.
  const std::string& message() const noexcept { return message_; }
  const std::string& log() const noexcept { return log_; }

 private:
  ErrorKind kind_;
  std::string message_;
  const char* file_;
  int line_;
  std::string log_;
};

}  // namespace hcwarm

#define HCWARM_THROW(kind, ...) \
  throw ::hcwarm::Error((kind), ::fmt::format(__VA_ARGS__), __FILE__, __LINE__)

#define HCWARM_THROW_LOG(kind, log, ...) \
  throw ::hcwarm::Error((kind), ::fmt::format(__VA_ARGS__), __FILE__, __LINE__, (log))

// Validates user-facing input; the message names the bad value.
#define HCWARM_CHECK_ARG(cond, ...)                                       \
  do {                                                                    \
    if (!(cond)) HCWARM_THROW(::hcwarm::ErrorKind::InvalidArgument, __VA_ARGS__); \
  } while (0)

// A broken internal invariant.
#define HCWARM_ASSERT(cond, ...)                                          \
  do {                                                                    \
    if (!(cond)) HCWARM_THROW(::hcwarm::ErrorKind::Internal, __VA_ARGS__); \
  } while (0)

// POSIX calls returning -1 and setting errno.
#define HCWARM_CHECK_SYS(expr, ...)                                                  \
  do {                                                                               \
    if ((expr) == -1) {                                                              \
      const int hcwarm_errno_ = errno;                                               \
      HCWARM_THROW(::hcwarm::ErrorKind::System, "{}: {}", ::fmt::format(__VA_ARGS__), \
                   ::hcwarm::errno_string(hcwarm_errno_));                           \
    }                                                                                \
  } while (0)

namespace hcwarm {
std::string errno_string(int err);
}
