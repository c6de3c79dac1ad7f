#pragma once
// Small POSIX file helpers for the JIT cache: whole-file reads through one fd,
// durable writes (write + fsync), directory fsync, a per-key flock, and a
// private temporary directory. Errors are hcwarm::Error (ErrorKind::Io) with the
// path and errno text; err() tells the errno for callers that must react to it.
#include <sys/stat.h>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/unique_fd.hpp"

namespace hcwarm::jit::fsu {

class DirFd;

// Throws ErrorKind::Io "<what> <p>: <errno text>".
[[noreturn]] void throw_io(const char* what, const std::filesystem::path& p, int err);

// Reads the whole regular file; nullopt when it does not exist (ENOENT/ENOTDIR).
// A symlink, FIFO or device is refused (Io), never followed or waited on.
std::optional<std::vector<std::byte>> read_file(const std::filesystem::path& p);

// The whole regular file open as fd (shown in messages); a FIFO or device is refused (Io).
std::vector<std::byte> read_open_file(int fd, const std::filesystem::path& shown);

// Creates p exclusively (O_EXCL), writes all bytes, fsyncs, closes. Throws Io.
void write_file_durable(const std::filesystem::path& p, std::span<const std::byte> bytes);
void write_file_durable(const std::filesystem::path& p, std::string_view text);
// Writes all bytes to the new file fd, fsyncs and closes it. Throws Io.
void write_open_file_durable(UniqueFd fd, std::span<const std::byte> bytes, const std::filesystem::path& shown);

// Creates or truncates p and writes all bytes; no fsync (scratch files). Throws Io.
void write_file(const std::filesystem::path& p, std::string_view text);

// fsync of a directory (makes renames/creations inside it durable). Throws Io.
void fsync_dir(const std::filesystem::path& dir);

// mkdir -p with mode 0700 (only this user may plant code in the cache); throws Io naming the first directory that fails.
void make_dirs(const std::filesystem::path& dir);

// remove_all that never throws; returns false when something could not be removed.
bool remove_tree(const std::filesystem::path& p) noexcept;

// Sum of the sizes of the regular files under p (recursive); 0 when absent.
uint64_t tree_bytes(const std::filesystem::path& p) noexcept;

// A wait for a lock longer than this is logged once, naming what it waits for.
inline constexpr double kLogWaitAfterSeconds = 5;

// Who holds lock_file, as its holder wrote it ("pid P on HOST since TIME"), or
// "another process (unknown pid)" when it says nothing readable. For messages only.
std::string lock_holder(const std::filesystem::path& lock_file);

// An exclusive flock(2) on a lock file that is created when missing and never
// unlinked (unlinking would let two holders lock two different inodes). The
// holder writes "pid P on HOST since TIME" into it, so a waiter can name it.
class FileLock {
 public:
  FileLock() = default;
  // Waits until locked. timeout_s > 0: after that long, throws ErrorKind::Timeout
  // naming `what` (e.g. the kernel and key) and the holder; a wait of more than a
  // few seconds is logged once. Throws Io when the file cannot be opened/created.
  static FileLock acquire(const std::filesystem::path& lock_file, double timeout_s = 0, std::string_view what = {});
  // Returns an unlocked FileLock (owns() false) when another holder has it.
  static FileLock try_acquire(const std::filesystem::path& lock_file);
  // The same for the lock file `name` in dir, opened by descriptor.
  static FileLock acquire_at(const DirFd& dir, std::string_view name, double timeout_s = 0, std::string_view what = {});
  static FileLock try_acquire_at(const DirFd& dir, std::string_view name);
  FileLock(FileLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  FileLock& operator=(FileLock&& o) noexcept;
  ~FileLock();
  bool owns() const { return fd_ >= 0; }
  void release() noexcept;

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  static FileLock wait_for(int fd, const std::filesystem::path& lock_file, double timeout_s, std::string_view what);
  static FileLock try_lock(int fd, const std::filesystem::path& lock_file);
  int fd_ = -1;
};

// A fresh private directory (mkdtemp) under parent, removed on destruction.
class ScratchDir {
 public:
  ScratchDir(const std::filesystem::path& parent, const std::string& prefix);
  // Made and removed through the parent's descriptor.
  ScratchDir(const DirFd& parent, const std::string& prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::unique_ptr<DirFd> parent_;
  std::string name_;
  std::filesystem::path path_;
};

// 16 random hex characters (for unique staging names).
std::string random_suffix();
// The current time in UTC, ISO-8601 to the second ("2026-12-01T19:30:00Z").
std::string utc_now();

}  // namespace hcwarm::jit::fsu
