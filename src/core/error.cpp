#include "core/error.hpp"

#include <cstring>

namespace hcwarm {

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument: return "invalid argument";
    case ErrorKind::Io: return "i/o error";
    case ErrorKind::Compile: return "compile error";
    case ErrorKind::Cuda: return "CUDA driver error";
    case ErrorKind::Nvrtc: return "NVRTC error";
    case ErrorKind::System: return "system error";
    case ErrorKind::Unavailable: return "unavailable";
    case ErrorKind::NotWarmed: return "not warmed";
    case ErrorKind::Timeout: return "timeout";
    case ErrorKind::Internal: return "internal error";
  }
  return "error";
}

Error::Error(ErrorKind kind, const std::string& message, const char* file, int line, std::string log)
    : std::runtime_error(fmt::format("{} ({}:{})", message, file, line)),
      kind_(kind),
      message_(message),
      file_(file),
      line_(line),
      log_(std::move(log)) {}

std::string errno_string(int err) {
  char buf[256];
  // GNU strerror_r returns the message pointer, which may not be buf.
  const char* msg = strerror_r(err, buf, sizeof buf);
  return fmt::format("{} (errno {})", msg, err);
}

}  // namespace hcwarm
