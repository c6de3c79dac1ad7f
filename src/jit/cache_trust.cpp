#include "jit/cache_trust.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/env_config.hpp"
#include "core/unique_fd.hpp"

namespace hcwarm::jit {
namespace fs = std::filesystem;

const CacheTrust CacheTrust::Owner{Who::Self, 0, {}};
const CacheTrust CacheTrust::Shared{Who::Anyone, 0, {}};

CacheTrust CacheTrust::shared_with(uid_t uid, std::string name) { return CacheTrust(Who::Named, uid, std::move(name)); }

CacheTrust CacheTrust::from_env(const EnvConfig& env) {
  if (env.cache_trust_owner_uid) return shared_with(*env.cache_trust_owner_uid, env.cache_trust_owner);
  return env.cache_trust_shared ? Shared : Owner;
}

bool CacheTrust::accepts_owner(uid_t uid) const {
  return uid == ::geteuid() || who_ == Who::Anyone || (who_ == Who::Named && uid == uid_);
}

std::string CacheTrust::describe() const {
  switch (who_) {
    case Who::Self: return "owner";
    case Who::Named: return "shared:" + name_;
    case Who::Anyone: return "shared";
  }
  return "owner";
}

std::optional<std::string> CacheTrust::distrust(const fs::path& p, const struct stat& st) const {
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return fmt::format("{} is writable by group or others (mode {:04o})", p.string(), st.st_mode & 07777);
  }
  if (!accepts_owner(st.st_uid)) {
    return fmt::format("{} is owned by uid {}, not by this user (uid {}); HCWARM_CACHE_TRUST=shared:{} accepts that "
                       "owner",
                       p.string(), st.st_uid, ::geteuid(), st.st_uid);
  }
  return std::nullopt;
}

namespace {

fs::path absolute_dir(const fs::path& p) {
  std::error_code ec;
  fs::path a = fs::absolute(p, ec).lexically_normal();
  if (a.filename().empty()) a = a.parent_path();  // "dir/" names dir
  return a;
}

}  // namespace

std::optional<std::string> CacheTrust::unsafe_parent(const struct stat& st, const fs::path& dir,
                                                     const fs::path& cache) const {
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return fmt::format("{} (above the cache {}) is writable by group or others without the sticky bit "
                       "(mode {:04o}): another user could swap the cache for her own; use a cache directory "
                       "under a private or sticky parent",
                       dir.string(), cache.string(), st.st_mode & 07777);
  }
  if (st.st_uid != 0 && !accepts_owner(st.st_uid)) {
    return fmt::format("{} (above the cache {}) is owned by uid {}, who could swap the cache; use a cache "
                       "directory under this user's or root's directories, or HCWARM_CACHE_TRUST=shared:{}",
                       dir.string(), cache.string(), st.st_uid, st.st_uid);
  }
  return std::nullopt;
}

std::optional<std::string> CacheTrust::walk_up(int dir_fd, fs::path shown, const fs::path& cache, bool self) const {
  struct stat here {};
  if (::fstat(dir_fd, &here) != 0) return fmt::format("cannot stat {}: {}", shown.string(), std::strerror(errno));
  if (self) {
    if (auto why = unsafe_parent(here, shown, cache)) return why;
  }
  UniqueFd cur(::dup(dir_fd));
  for (int depth = 0; depth < 256; ++depth) {
    UniqueFd up(::openat(cur.get(), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    struct stat st {};
    if (up.get() < 0 || ::fstat(up.get(), &st) != 0) {
      return fmt::format("cannot check the directory above {}: {}", shown.string(), std::strerror(errno));
    }
    if (st.st_dev == here.st_dev && st.st_ino == here.st_ino) return std::nullopt;  // reached "/"
    shown = shown.parent_path();
    if (auto why = unsafe_parent(st, shown, cache)) return why;
    here = st;
    cur = std::move(up);
  }
  return fmt::format("{} is nested too deeply to check", cache.string());
}

std::optional<std::string> CacheTrust::insecure_ancestor(int dir_fd, const fs::path& shown) const {
  const fs::path dir = absolute_dir(shown);
  return walk_up(dir_fd, dir, dir, /*self=*/false);
}

std::optional<std::string> CacheTrust::insecure_parent(int dir_fd, const fs::path& dir, const fs::path& root) const {
  return walk_up(dir_fd, absolute_dir(dir), absolute_dir(root), /*self=*/true);
}

}  // namespace hcwarm::jit
