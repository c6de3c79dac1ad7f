#include "jit/cache_layout.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "jit/sha256.hpp"

namespace hcwarm::jit::layout {

std::string_view as_text(const std::vector<std::byte>& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

bool simple_name(const std::string& n) {
  return !n.empty() && n != "." && n != ".." && n.find('/') == std::string::npos && n != kManifest;
}

std::optional<std::string> verify_dir(const fsu::DirFd& dir, std::string_view version, std::string_view ns,
                                      std::string_view key, std::string_view want, Manifest* manifest_out,
                                      std::vector<std::byte>* want_bytes) {
  try {
    const auto mtext = dir.read(kManifest);
    if (!mtext) return std::string("manifest.json is missing");
    Manifest m;
    try {
      m = Manifest::parse(as_text(*mtext));
    } catch (const Error& e) {
      return fmt::format("manifest.json is unreadable: {}", e.message());
    }
    if (m.key != key) return fmt::format("manifest.json names key {} (entry swapped or moved)", m.key);
    if (m.ns != ns || m.hcwarm_version != version) {
      return fmt::format("manifest.json is for {}/v{}, not {}/v{}", m.ns, m.hcwarm_version, ns, version);
    }
    std::set<std::string> listed;
    bool found_want = want.empty();
    for (const auto& f : m.files) {
      if (!simple_name(f.name) || !listed.insert(f.name).second) return fmt::format("bad file name {} in manifest", quoted_excerpt(f.name));
      const auto bytes = dir.read(f.name);
      if (!bytes) return fmt::format("{} is missing", f.name);
      if (bytes->size() != f.size) {
        return fmt::format("{} has {} bytes, the manifest says {} ({})", f.name, bytes->size(), f.size,
                           bytes->size() < f.size ? "truncated or half-written" : "modified");
      }
      if (sha256_hex(*bytes) != f.sha256) return fmt::format("{} does not match its SHA-256 (corrupted or replaced)", f.name);
      if (f.name == want) {
        found_want = true;
        if (want_bytes) *want_bytes = std::move(*bytes);
      }
    }
    if (!found_want) return fmt::format("the entry has no {}", want);
    for (const auto& n : dir.names()) {
      if (n != kManifest && !listed.count(n)) return fmt::format("unexpected file {} in the entry", quoted_excerpt(n));
    }
    if (manifest_out) *manifest_out = std::move(m);
    return std::nullopt;
  } catch (const Error& e) {
    return e.message();
  }
}

bool version_dir_name(const std::string& n) {
  if (n.size() < 2 || n[0] != 'v' || !std::isdigit(static_cast<unsigned char>(n[1]))) return false;
  return std::all_of(n.begin() + 1, n.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
}

bool has_tag(const fsu::DirFd& root) {
  try {
    const auto t = root.read(kTagName);
    return t && as_text(*t).substr(0, kTagSignature.size()) == kTagSignature;
  } catch (const Error&) {
    return false;
  }
}

bool is_dir(const std::optional<struct stat>& st) { return st && S_ISDIR(st->st_mode); }

}  // namespace hcwarm::jit::layout
