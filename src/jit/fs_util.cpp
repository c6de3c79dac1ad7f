#include "jit/fs_util.hpp"
#include "core/logging.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <random>

#include "core/error.hpp"
#include "core/unique_fd.hpp"
#include "jit/dir_fd.hpp"

namespace hcwarm::jit::fsu {
namespace fs = std::filesystem;

void throw_io(const char* what, const fs::path& p, int err) {
  throw Error(ErrorKind::Io, fmt::format("{} {}: {}", what, p.string(), errno_string(err)), __FILE__, __LINE__);
}

namespace {

// O_NOFOLLOW: a lock file replaced by a symlink must not create or open its target.
// dir_fd AT_FDCWD: p is a path; else p is a name in that directory. A lock file
// root creates in another user's cache (maintenance) is given to the directory's owner.
int open_lock_file(int dir_fd, const fs::path& p, const fs::path& shown) {
  const int fd = ::openat(dir_fd, p.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) throw_io("cannot open lock file", shown, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorKind::Io, fmt::format("lock file {} is not a regular file", shown.string()), __FILE__, __LINE__);
  }
  struct stat dir {};
  if (dir_fd != AT_FDCWD && ::geteuid() == 0 && ::fstat(dir_fd, &dir) == 0 && st.st_uid != dir.st_uid) {
    [[maybe_unused]] const int rc = ::fchown(fd, dir.st_uid, dir.st_gid);
  }
  return fd;
}

// The lock file's text says who holds it (for a waiter's message only: flock decides).
void write_holder(int fd) {
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  const std::string text = fmt::format("pid {} on {} since {}\n", ::getpid(), host, utc_now());
  if (::ftruncate(fd, 0) == 0) {
    [[maybe_unused]] const ssize_t n = ::pwrite(fd, text.data(), text.size(), 0);
  }
}

std::string read_holder(int fd) {
  char buf[160];
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string s;
  for (ssize_t i = 0; i < n && buf[i] != '\n'; ++i) s += std::isprint(static_cast<unsigned char>(buf[i])) ? buf[i] : '?';
  return s.empty() ? std::string("another process (unknown pid)") : s;
}

}  // namespace

std::string lock_holder(const fs::path& lock_file) {
  // O_NOFOLLOW | O_NONBLOCK: a name planted in the cache is neither followed nor waited on.
  const UniqueFd fd(::open(lock_file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  return read_holder(fd.get());
}

std::optional<std::vector<std::byte>> read_file(const fs::path& p) {
  // O_NOFOLLOW: a planted symlink is refused; O_NONBLOCK: a planted FIFO cannot block us.
  UniqueFd fd(::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    throw_io("cannot open", p, errno);
  }
  return read_open_file(fd.get(), p);
}

std::vector<std::byte> read_open_file(int fd, const fs::path& shown) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_io("cannot stat", shown, errno);
  if (!S_ISREG(st.st_mode)) throw Error(ErrorKind::Io, fmt::format("{} is not a regular file", shown.string()), __FILE__, __LINE__);
  std::vector<std::byte> out(static_cast<size_t>(st.st_size));
  size_t got = 0;
  for (;;) {
    if (got == out.size()) out.resize(out.size() + 4096);  // the file may have grown: read to EOF
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_io("cannot read", shown, errno);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

void write_file_durable(const fs::path& p, std::span<const std::byte> bytes) {
  UniqueFd fd(::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (fd.get() < 0) throw_io("cannot create", p, errno);
  write_open_file_durable(std::move(fd), bytes, p);
}

void write_open_file_durable(UniqueFd fd, std::span<const std::byte> bytes, const fs::path& shown) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_io("cannot write", shown, errno);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) throw_io("cannot fsync", shown, errno);
  if (fd.close_checked() != 0) throw_io("cannot close", shown, errno);
}

void write_file_durable(const fs::path& p, std::string_view text) {
  write_file_durable(p, std::as_bytes(std::span<const char>(text.data(), text.size())));
}

void write_file(const fs::path& p, std::string_view text) {
  UniqueFd fd(::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (fd.get() < 0) throw_io("cannot create", p, errno);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_io("cannot write", p, errno);
    }
    done += static_cast<size_t>(n);
  }
  if (fd.close_checked() != 0) throw_io("cannot close", p, errno);
}

void fsync_dir(const fs::path& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) throw_io("cannot open directory", dir, errno);
  if (::fsync(fd.get()) != 0 && errno != EINVAL) throw_io("cannot fsync directory", dir, errno);
}

void make_dirs(const fs::path& dir) {
  if (dir.empty()) return;
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return;
    throw_io("not a directory:", dir, ENOTDIR);
  }
  if (dir.has_parent_path() && dir.parent_path() != dir) make_dirs(dir.parent_path());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw_io("cannot create directory", dir, errno);
}

bool remove_tree(const fs::path& p) noexcept {
  std::error_code ec;
  fs::remove_all(p, ec);
  if (ec) {
    // A concurrent writer (an orphaned compiler) may have added a file: try once more.
    ec.clear();
    fs::remove_all(p, ec);
  }
  return !ec;
}

uint64_t tree_bytes(const fs::path& p) noexcept {
  uint64_t total = 0;
  std::error_code ec;
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return 0;
  if (S_ISREG(st.st_mode)) return static_cast<uint64_t>(st.st_size);
  if (!S_ISDIR(st.st_mode)) return 0;
  for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) total += static_cast<uint64_t>(st.st_size);
  }
  return total;
}

FileLock& FileLock::operator=(FileLock&& o) noexcept {
  if (this != &o) {
    release();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() { release(); }

void FileLock::release() noexcept {
  if (fd_ >= 0) {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
    fd_ = -1;
  }
}

FileLock FileLock::acquire(const fs::path& lock_file, double timeout_s, std::string_view what) {
  return wait_for(open_lock_file(AT_FDCWD, lock_file, lock_file), lock_file, timeout_s, what);
}

FileLock FileLock::acquire_at(const DirFd& dir, std::string_view name, double timeout_s, std::string_view what) {
  const fs::path shown = dir / name;
  return wait_for(open_lock_file(dir.fd(), std::string(name), shown), shown, timeout_s, what);
}

FileLock FileLock::wait_for(int fd, const fs::path& lock_file, double timeout_s, std::string_view what) {
  const auto t0 = std::chrono::steady_clock::now();
  auto waited = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  auto sleep_us = 1000;
  bool logged = false;
  // Polls (LOCK_NB) rather than blocking in flock, so that the wait can end.
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {
      const int err = errno;
      ::close(fd);
      throw_io("cannot lock", lock_file, err);
    }
    const double w = waited();
    const std::string name = what.empty() ? lock_file.string() : std::string(what);
    if (timeout_s > 0 && w >= timeout_s) {
      const std::string holder = read_holder(fd);
      ::close(fd);
      throw Error(ErrorKind::Timeout,
                  fmt::format("gave up after {:.0f} s waiting for the lock of {} held by {} ({}); "
                              "HCWARM_LOCK_TIMEOUT_S sets the limit",
                              w, name, holder, lock_file.string()),
                  __FILE__, __LINE__);
    }
    if (!logged && w >= kLogWaitAfterSeconds) {
      log::warn("waiting for the lock of {}, held by {}", name, read_holder(fd));
      logged = true;
    }
    ::usleep(static_cast<useconds_t>(sleep_us));
    sleep_us = std::min(sleep_us * 2, 100000);
  }
  write_holder(fd);
  return FileLock(fd);
}

FileLock FileLock::try_acquire(const fs::path& lock_file) {
  return try_lock(open_lock_file(AT_FDCWD, lock_file, lock_file), lock_file);
}

FileLock FileLock::try_acquire_at(const DirFd& dir, std::string_view name) {
  const fs::path shown = dir / name;
  return try_lock(open_lock_file(dir.fd(), std::string(name), shown), shown);
}

FileLock FileLock::try_lock(int fd, const fs::path& lock_file) {
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) return FileLock();
    throw_io("cannot lock", lock_file, err);
  }
  write_holder(fd);
  return FileLock(fd);
}

ScratchDir::ScratchDir(const fs::path& parent, const std::string& prefix) {
  std::string tmpl = (parent / (prefix + "XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw_io("cannot create directory", tmpl, errno);
  path_ = tmpl;
}

ScratchDir::ScratchDir(const DirFd& parent, const std::string& prefix)
    : parent_(std::make_unique<DirFd>(parent.reopen())), name_(parent.make_unique_child(prefix)) {
  path_ = parent / name_;
}

ScratchDir::~ScratchDir() {
  if (parent_) {
    parent_->remove_tree(name_);
  } else {
    remove_tree(path_);
  }
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string random_suffix() {
  thread_local std::mt19937_64 rng{std::random_device{}() ^ (static_cast<uint64_t>(::getpid()) << 32)};
  return fmt::format("{:016x}", rng());
}

}  // namespace hcwarm::jit::fsu
