#pragma once
// What the disk cache's files and names are, shared by its runtime side
// (disk_cache.cpp) and its maintenance (disk_cache_maintenance.cpp).
#include <sys/stat.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jit/dir_fd.hpp"
#include "jit/disk_cache.hpp"

namespace hcwarm::jit::layout {

inline constexpr const char* kManifest = "manifest.json";
// The standard cache-directory tag (bford.info/cachedir): backup tools skip the
// directory, and `hcwarm cache clear` only empties a directory that carries it.
inline constexpr const char* kTagName = "CACHEDIR.TAG";
inline constexpr std::string_view kTagSignature = "Signature: 8a477f597d28d172789f06886806bc55";
inline constexpr std::string_view kTagText =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This directory is an hcwarm kernel cache: `hcwarm cache clear` empties it.\n";
inline constexpr size_t kMaxQuarantine = 32;  // per namespace; older ones are deleted

std::string_view as_text(const std::vector<std::byte>& b);
// A file name an entry may hold: one path component, not the manifest's.
bool simple_name(const std::string& n);
// Verifies the entry open as dir. Returns the reason it is bad, or nullopt; on
// success fills manifest and, when `want` names one of its files, that file's bytes.
std::optional<std::string> verify_dir(const fsu::DirFd& dir, std::string_view version, std::string_view ns,
                                      std::string_view key, std::string_view want, Manifest* manifest_out,
                                      std::vector<std::byte>* want_bytes);
// "v" followed by a dotted version: the top-level directories hcwarm creates.
bool version_dir_name(const std::string& n);
bool has_tag(const fsu::DirFd& root);
bool is_dir(const std::optional<struct stat>& st);

}  // namespace hcwarm::jit::layout
