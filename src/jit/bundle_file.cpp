#include "jit/bundle_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/limits.hpp"
#include "jit/sha256.hpp"

namespace hcwarm::jit {
namespace {

// Reads exactly n bytes at offset into out; a file that shrank meanwhile is truncated.
void pread_exact(int fd, char* out, size_t n, uint64_t offset, const std::string& source) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, out + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      HCWARM_THROW(ErrorKind::InvalidArgument, "{}: cannot read kernel bundle: {}", source, errno_string(err));
    }
    HCWARM_CHECK_ARG(r > 0, "{}: truncated: the file shrank while it was read", source);
    got += static_cast<size_t>(r);
  }
}

}  // namespace

// O_NONBLOCK: a FIFO is refused below instead of waiting for a writer, as read_input_file does.
BundleFile::BundleFile(const std::filesystem::path& path, const BundleLimits& limits)
    : source_(path.string()), fd_(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)) {
  if (fd_.get() < 0) {
    const int err = errno;
    HCWARM_THROW(ErrorKind::InvalidArgument, "{}: cannot open kernel bundle: {}", source_, errno_string(err));
  }
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) {
    const int err = errno;
    HCWARM_THROW(ErrorKind::InvalidArgument, "{}: cannot stat kernel bundle: {}", source_, errno_string(err));
  }
  HCWARM_CHECK_ARG(S_ISREG(st.st_mode), "{}: kernel bundle is {}, not a regular file", source_,
                   file_type_name(st.st_mode));
  size_ = static_cast<uint64_t>(st.st_size);
  HCWARM_CHECK_ARG(size_ <= limits.max_bytes, "{}: {} bytes, over the bundle limit of {} bytes", source_, size_,
                   limits.max_bytes);
  std::string head(std::min<uint64_t>(size_, kBundleMagic.size()), '\0');
  pread_exact(fd_.get(), head.data(), head.size(), 0, source_);
  HCWARM_CHECK_ARG(head == kBundleMagic, "{}: not an hcwarm kernel bundle", source_);

  std::string tail(std::min<uint64_t>(size_, kBundleTrailerMaxBytes), '\0');
  pread_exact(fd_.get(), tail.data(), tail.size(), size_ - tail.size(), source_);
  trailer_ = parse_bundle_trailer(tail, size_, source_);

  // One chunk in memory at a time, whatever the bundle's size.
  Sha256 h;
  std::string chunk(std::min<uint64_t>(trailer_.body_bytes, limits::kBundleHashChunkBytes), '\0');
  for (uint64_t at = 0; at < trailer_.body_bytes;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), trailer_.body_bytes - at));
    pread_exact(fd_.get(), chunk.data(), n, at, source_);
    largest_read_ = std::max<uint64_t>(largest_read_, n);
    h.update(std::string_view(chunk.data(), n));
    at += n;
  }
  HCWARM_CHECK_ARG(h.hex() == trailer_.sha256,
                   "{}: checksum mismatch: the bundle was altered or damaged after it was written", source_);
}

std::string BundleFile::read_all() const {
  std::string out(static_cast<size_t>(size_), '\0');
  pread_exact(fd_.get(), out.data(), out.size(), 0, source_);
  return out;
}

}  // namespace hcwarm::jit
