#include "core/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "core/error.hpp"
#include "core/unique_fd.hpp"

namespace hcwarm {
namespace fs = std::filesystem;

namespace {

// Creates a unique temporary beside final_path and writes bytes into it.
fs::path write_temporary(const fs::path& final_path, std::string_view bytes) {
  const fs::path dir = final_path.has_parent_path() ? final_path.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + final_path.filename().string() + ".tmp.XXXXXX")).string();
  // mkostemp creates with O_EXCL (so never through a planted link) and a random name.
  UniqueFd fd(::mkostemp(tmpl.data(), O_CLOEXEC));
  if (fd.get() < 0) {
    const int err = errno;
    HCWARM_THROW(ErrorKind::Io, "cannot write {}: cannot create a temporary in {}: {}", final_path.string(),
                 dir.string(), errno_string(err));
  }
  const fs::path tmp(tmpl);
  auto fail = [&](const char* what, int err) {
    ::unlink(tmp.c_str());
    HCWARM_THROW(ErrorKind::Io, "cannot write {}: {}: {}", final_path.string(), what, errno_string(err));
  };
  // mkostemp makes 0600; outputs are ordinary readable files.
  if (::fchmod(fd.get(), 0644) != 0) fail("fchmod", errno);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", errno);
    }
    done += static_cast<size_t>(n);
  }
  if (fd.close_checked() != 0) fail("close", errno);
  return tmp;
}

void rename_into_place(const fs::path& tmp, const fs::path& final_path) {
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    HCWARM_THROW(ErrorKind::Io, "cannot write {}: {}", final_path.string(), errno_string(err));
  }
}

}  // namespace

const char* file_type_name(unsigned st_mode) {
  const mode_t m = static_cast<mode_t>(st_mode);
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISREG(m)) return "a regular file";
  return "of an unknown type";
}

std::string read_input_file(const fs::path& path, std::string_view what, uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    const int err = errno;
    HCWARM_THROW(ErrorKind::InvalidArgument, "{}: cannot open {}: {}", path.string(), what, errno_string(err));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    const int err = errno;
    HCWARM_THROW(ErrorKind::InvalidArgument, "{}: cannot stat {}: {}", path.string(), what, errno_string(err));
  }
  HCWARM_CHECK_ARG(S_ISREG(st.st_mode), "{}: {} is {}, not a regular file", path.string(), what,
                   file_type_name(st.st_mode));
  HCWARM_CHECK_ARG(static_cast<uint64_t>(st.st_size) <= max_bytes, "{}: {} is {} bytes, over the limit of {} bytes",
                   path.string(), what, st.st_size, max_bytes);
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  // Reads what the size said, and no more: a file growing under us cannot make the read endless.
  while (got < out.size()) {
    const ssize_t n = ::read(fd.get(), out.data() + got, out.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      HCWARM_THROW(ErrorKind::InvalidArgument, "{}: cannot read {}: {}", path.string(), what, errno_string(err));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

bool input_present(const fs::path& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

void write_output_file(const fs::path& path, std::string_view bytes) {
  rename_into_place(write_temporary(path, bytes), path);
}

}  // namespace hcwarm
