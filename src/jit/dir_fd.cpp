#include "jit/dir_fd.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/error.hpp"
#include "jit/fs_util.hpp"

namespace hcwarm::jit::fsu {
namespace fs = std::filesystem;

namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// The names in an open directory, read through a duplicate so that fd keeps its offset.
std::vector<std::string> list_names(int fd, const fs::path& shown) {
  const int dup_fd = ::openat(fd, ".", kDirFlags);
  if (dup_fd < 0) throw_io("cannot list", shown, errno);
  DIR* d = ::fdopendir(dup_fd);
  if (d == nullptr) {
    const int err = errno;
    ::close(dup_fd);
    throw_io("cannot list", shown, err);
  }
  std::vector<std::string> out;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (n != "." && n != "..") out.emplace_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

bool remove_at(int dir_fd, const std::string& name, int depth, int* err) noexcept {
  if (::unlinkat(dir_fd, name.c_str(), 0) == 0 || errno == ENOENT) return true;
  if (errno != EISDIR && errno != EPERM) {
    if (err) *err = errno;
    return false;
  }
  const int fd = ::openat(dir_fd, name.c_str(), kDirFlags);
  if (fd < 0) {
    if (err) *err = errno;
    return errno == ENOENT;
  }
  bool ok = depth < 64;
  try {
    if (ok) {
      for (const auto& n : list_names(fd, name)) ok = remove_at(fd, n, depth + 1, err) && ok;
    }
  } catch (const Error&) {
    ok = false;
  }
  ::close(fd);
  if (::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    if (err) *err = errno;
    return false;
  }
  return ok;
}

uint64_t bytes_at(int fd, int depth) noexcept {
  uint64_t total = 0;
  try {
    for (const auto& n : list_names(fd, "")) {
      struct stat st {};
      if (::fstatat(fd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISREG(st.st_mode)) total += static_cast<uint64_t>(st.st_size);
      if (S_ISDIR(st.st_mode) && depth < 64) {
        const UniqueFd sub(::openat(fd, n.c_str(), kDirFlags));
        if (sub.get() >= 0) total += bytes_at(sub.get(), depth + 1);
      }
    }
  } catch (const Error&) {
  }
  return total;
}

}  // namespace

std::optional<DirFd> DirFd::open(const fs::path& p, bool follow) {
  UniqueFd fd(::open(p.c_str(), follow ? (kDirFlags & ~O_NOFOLLOW) : kDirFlags));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::nullopt;
    if (errno == ENOTDIR || errno == ELOOP) {
      throw Error(ErrorKind::Io, fmt::format("{} is not a directory{}", p.string(), errno == ELOOP ? " (a symlink)" : ""),
                  __FILE__, __LINE__);
    }
    throw_io("cannot open directory", p, errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_io("cannot stat", p, errno);
  return DirFd(std::move(fd), p, st);
}

DirFd DirFd::reopen() const {
  UniqueFd fd(::openat(fd_.get(), ".", kDirFlags));
  if (fd.get() < 0) throw_io("cannot open directory", path_, errno);
  return DirFd(std::move(fd), path_, st_);
}

std::optional<DirFd> DirFd::child(std::string_view name) const {
  const std::string n(name);
  UniqueFd fd(::openat(fd_.get(), n.c_str(), kDirFlags));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ENOENT) return std::nullopt;
    if (err == ELOOP || err == ENOTDIR) {
      struct stat st {};
      const bool link = ::fstatat(fd_.get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
      throw Error(ErrorKind::Io, fmt::format("{} is {}", (path_ / n).string(), link ? "a symlink, not a directory" : "not a directory"),
                  __FILE__, __LINE__);
    }
    throw_io("cannot open directory", path_ / n, err);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_io("cannot stat", path_ / n, errno);
  return DirFd(std::move(fd), path_ / n, st);
}

DirFd DirFd::make_child(std::string_view name) const {
  const std::string n(name);
  if (::mkdirat(fd_.get(), n.c_str(), 0700) != 0 && errno != EEXIST) throw_io("cannot create directory", path_ / n, errno);
  auto c = child(name);
  if (!c) throw_io("cannot open directory", path_ / n, ENOENT);  // removed meanwhile
  return std::move(*c);
}

std::string DirFd::make_unique_child(std::string_view prefix) const {
  for (int attempt = 0;; ++attempt) {
    const std::string n = std::string(prefix) + random_suffix();
    if (::mkdirat(fd_.get(), n.c_str(), 0700) == 0) return n;
    if (errno != EEXIST || attempt == 16) throw_io("cannot create a directory in", path_, errno);
  }
}

std::optional<struct stat> DirFd::stat_child(std::string_view name) const {
  struct stat st {};
  if (::fstatat(fd_.get(), std::string(name).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return std::nullopt;
    throw_io("cannot stat", path_ / std::string(name), errno);
  }
  return st;
}

std::vector<std::string> DirFd::names() const { return list_names(fd_.get(), path_); }

std::optional<std::vector<std::byte>> DirFd::read(std::string_view name) const {
  const fs::path shown = path_ / std::string(name);
  // O_NOFOLLOW: a planted symlink is refused; O_NONBLOCK: a planted FIFO cannot block us.
  UniqueFd fd(::openat(fd_.get(), std::string(name).c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw_io("cannot open", shown, errno);
  }
  return read_open_file(fd.get(), shown);
}

void DirFd::write_durable(std::string_view name, std::span<const std::byte> bytes) const {
  const fs::path shown = path_ / std::string(name);
  UniqueFd fd(::openat(fd_.get(), std::string(name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (fd.get() < 0) throw_io("cannot create", shown, errno);
  write_open_file_durable(std::move(fd), bytes, shown);
}

int DirFd::rename(std::string_view name, const DirFd& to, std::string_view to_name) const {
  return ::renameat(fd_.get(), std::string(name).c_str(), to.fd(), std::string(to_name).c_str()) == 0 ? 0 : errno;
}

bool DirFd::remove_tree(std::string_view name, int* err) const noexcept {
  try {
    const std::string n(name);
    if (remove_at(fd_.get(), n, 0, err)) return true;
    // A concurrent writer (an orphaned compiler) may have added a file: try once more.
    return remove_at(fd_.get(), n, 0, err);
  } catch (...) {
    return false;
  }
}

uint64_t DirFd::tree_bytes() const noexcept { return bytes_at(fd_.get(), 0); }

void DirFd::fsync() const {
  if (::fsync(fd_.get()) != 0 && errno != EINVAL) throw_io("cannot fsync directory", path_, errno);
}

void DirFd::touch() const { ::futimens(fd_.get(), nullptr); }

}  // namespace hcwarm::jit::fsu
