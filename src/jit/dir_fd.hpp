#pragma once
// A directory opened once and then worked in by descriptor (openat, fstatat,
// renameat, unlinkat): a name below it is resolved from the directory that was
// checked, never through a symlink, so what the cache checks is what it reads,
// writes and removes. path() is for messages and for handing to a compiler.
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/unique_fd.hpp"

namespace hcwarm::jit::fsu {

class DirFd {
 public:
  // Opens the directory p (follow: p itself may be a symlink the user chose).
  // nullopt when it does not exist; throws Io when it is not a directory.
  static std::optional<DirFd> open(const std::filesystem::path& p, bool follow);

  int fd() const { return fd_.get(); }
  DirFd reopen() const;  // a second descriptor of the same directory
  const std::filesystem::path& path() const { return path_; }
  const struct stat& st() const { return st_; }

  // The child directory `name`, never through a symlink: nullopt when missing;
  // throws Io naming it when it is a symlink or not a directory.
  std::optional<DirFd> child(std::string_view name) const;
  // child(), created (mode 0700) when missing.
  DirFd make_child(std::string_view name) const;
  // A new directory named prefix + 16 random hex characters (mode 0700); returns its name.
  std::string make_unique_child(std::string_view prefix) const;

  // lstat of a name in this directory; nullopt when missing.
  std::optional<struct stat> stat_child(std::string_view name) const;
  // The names in this directory (not "." or ".."), sorted.
  std::vector<std::string> names() const;
  // The whole regular file `name`; nullopt when missing. A symlink, FIFO or device
  // is refused (Io), never followed or waited on.
  std::optional<std::vector<std::byte>> read(std::string_view name) const;
  // Creates `name` exclusively, writes all bytes and fsyncs it. Throws Io.
  void write_durable(std::string_view name, std::span<const std::byte> bytes) const;
  // renameat(2) of `name` to `to`/`to_name`; errno (0 on success).
  int rename(std::string_view name, const DirFd& to, std::string_view to_name) const;
  // Removes `name` and, when it is a directory, everything below it, following no
  // link. Never throws; false when something stayed (its errno in *err when given).
  bool remove_tree(std::string_view name, int* err = nullptr) const noexcept;
  // Bytes of the regular files below this directory.
  uint64_t tree_bytes() const noexcept;
  void fsync() const;    // makes creations and renames inside durable; throws Io
  void touch() const;    // mtime = now (the cache's LRU); a read-only mount is ignored

  std::filesystem::path operator/(std::string_view name) const { return path_ / std::string(name); }

 private:
  DirFd(UniqueFd fd, std::filesystem::path path, const struct stat& st)
      : fd_(std::move(fd)), path_(std::move(path)), st_(st) {}
  UniqueFd fd_;
  std::filesystem::path path_;
  struct stat st_ {};
};

}  // namespace hcwarm::jit::fsu
