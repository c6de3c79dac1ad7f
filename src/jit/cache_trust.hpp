#pragma once
// Whose directories the kernel cache loads native code from (HCWARM_CACHE_TRUST),
// and the checks that apply it: to the cache's own directories and files, and to
// every directory above the cache root, which must not let anyone else rename the
// root away (as ssh checks the directories above its keys).
#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace hcwarm {
struct EnvConfig;
}

namespace hcwarm::jit {

class CacheTrust {
 public:
  enum class Who { Self, Named, Anyone };
  static const CacheTrust Owner;   // this user's directories only (the default)
  static const CacheTrust Shared;  // anyone's: whoever created the path first
  static CacheTrust shared_with(uid_t uid, std::string name);  // this user's and uid's
  static CacheTrust from_env(const EnvConfig& env);

  Who who() const { return who_; }
  bool accepts_owner(uid_t uid) const;
  // "owner", "shared:NAME" or "shared", as HCWARM_CACHE_TRUST spells it.
  std::string describe() const;
  bool operator==(const CacheTrust& o) const { return who_ == o.who_ && (who_ != Who::Named || uid_ == o.uid_); }

  // Why the cache directory or file p (st from fstat/lstat) is not to be trusted, or
  // nullopt: group/other can write it, or its owner is not accepted.
  std::optional<std::string> distrust(const std::filesystem::path& p, const struct stat& st) const;
  // Why the directories above dir_fd (an open directory shown as `shown`) let another
  // user swap it, or nullopt. Each must be owned by root, this user or an accepted
  // owner, and not be writable by group/others unless it has the sticky bit (/tmp).
  // Walks ".." from the descriptor: what is checked is the tree actually opened.
  std::optional<std::string> insecure_ancestor(int dir_fd, const std::filesystem::path& shown) const;
  // The same for a cache root `root` that does not exist yet and would be created
  // in dir_fd (its nearest existing ancestor, shown as dir): dir_fd itself is checked too.
  std::optional<std::string> insecure_parent(int dir_fd, const std::filesystem::path& dir,
                                             const std::filesystem::path& root) const;

 private:
  std::optional<std::string> unsafe_parent(const struct stat& st, const std::filesystem::path& dir,
                                           const std::filesystem::path& cache) const;
  std::optional<std::string> walk_up(int dir_fd, std::filesystem::path shown, const std::filesystem::path& cache,
                                     bool self) const;
  CacheTrust(Who who, uid_t uid, std::string name) : who_(who), uid_(uid), name_(std::move(name)) {}
  Who who_;
  uid_t uid_ = 0;
  std::string name_;
};

}  // namespace hcwarm::jit
