#pragma once
// Kernel bundles: verified cache entries in one file, to ship what one machine
// built (`hcwarm cache build`) to many (`hcwarm cache export | import`).
//
// Format 1, every number decimal ASCII:
//
//   hcwarm-kernel-bundle 1\n          magic line and format
//   <H>\n                             byte length of the header JSON
//   <header JSON, H bytes>\n          {"format", "hcwarm_version", "created", "payload_bytes",
//                                      "entries": [{"namespace", "key", "description",
//                                                   "manifest_bytes", "manifest_sha256"}]}
//   <payload>                         per entry, in header order: its manifest.json (manifest_bytes),
//                                     then each file its manifest lists, in order, of the listed size
//   sha256 <64 hex>\n                 SHA-256 of every byte before this line
//   [ed25519 <64 hex> <128 hex>\n]     signed bundles only: jit/bundle_signature.hpp
//
// The signature line comes after the checksum, outside what the checksum covers,
// so that an unsigned bundle's bytes are unchanged. A reader from before
// signatures refuses a signed bundle as damaged (its last line is not the
// checksum), never imports it half-checked. The checksum is verified streaming,
// in bounded memory, before the bundle is read whole (jit/bundle_file.hpp).
//
// A bundle is taken whole or not at all: parse_bundle() checks the size bound,
// the trailer checksum, the header, each manifest (key, namespace, version,
// file names) and every file's size and SHA-256 before import_bundle() may
// publish anything, and then each entry goes through DiskCache's own path
// (key lock, staging dir, fsync, rename). Entries already present and valid stay.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/limits.hpp"
#include "jit/bundle_signature.hpp"
#include "jit/disk_cache.hpp"

namespace hcwarm::jit {

inline constexpr int kBundleFormat = 1;
// A bundle's first bytes: this magic, a space, kBundleFormat.
inline constexpr std::string_view kBundleMagic = "hcwarm-kernel-bundle";

// One entry. File bytes are views: into the bundle text (parse_bundle) or into
// storage the caller keeps alive (read_cache_entry's owner).
struct BundleEntry {
  std::string ns;   // compiler namespace directory
  std::string key;  // 64 hex characters
  Manifest manifest;
  std::string manifest_text;  // manifest.json as stored
  std::vector<std::pair<std::string, std::span<const std::byte>>> files;  // manifest order
};

struct Bundle {
  std::string hcwarm_version;
  std::string created;
  std::string sha256;  // the trailer's checksum (parse_bundle: verified)
  std::vector<BundleEntry> entries;
};

// Bounds of what a bundle may hold (past one: InvalidArgument naming it).
struct BundleLimits {
  uint64_t max_bytes = limits::kMaxBundleBytes;
  uint64_t max_entries = limits::kMaxBundleEntries;
};

// The lines after the payload: the checksum, then a signature when signed.
struct BundleTrailer {
  uint64_t body_bytes = 0;  // the bytes the checksum covers
  std::string sha256;       // 64 hex, as the trailer states it (not yet compared)
  std::optional<BundleSignature> signature;
};
// The most of a bundle's end that parse_bundle_trailer needs.
inline constexpr size_t kBundleTrailerMaxBytes = 72 + kBundleSignatureLineBytes;

// The trailer, from `tail`: the last min(total_bytes, kBundleTrailerMaxBytes) bytes
// of a bundle of total_bytes. InvalidArgument "<source>: ..." when the last lines
// are not a checksum line, optionally followed by a well-formed signature line.
BundleTrailer parse_bundle_trailer(std::string_view tail, uint64_t total_bytes, const std::string& source);

// The bundle's bytes (unsigned; `cache export --sign` appends the signature line).
// The size bound leaves room for a signature line. Throws InvalidArgument when the result would be over
// limits.max_bytes or hold over limits.max_entries entries (so every bundle
// written can be imported), or when two entries share a namespace and key.
std::string write_bundle(const Bundle& bundle, const BundleLimits& limits = {});

// Parses and verifies the whole bundle; views in the result point into `bytes`.
// Throws InvalidArgument "<source>: ..." naming the first thing wrong (truncated,
// checksum, header field, manifest, file size or SHA-256, another hcwarm version).
Bundle parse_bundle(std::string_view bytes, const std::string& source, const BundleLimits& limits = {});

// The verified entry (ns, key) of `cache`, its file bytes appended to `storage`,
// which must outlive the entry (its views point into the inner vectors' buffers,
// which stay put when `storage` grows).
// Returns the reason it cannot be exported (missing, bad) instead of throwing
// for those; throws Io for an entry that cannot be trusted (DiskCache::lookup).
struct CacheEntryRead {
  std::optional<BundleEntry> entry;
  std::string problem;  // "missing", or why the entry is bad
};
CacheEntryRead read_cache_entry(const DiskCache& cache, std::string_view ns, std::string_view key,
                                std::vector<std::vector<std::byte>>& storage);

struct ImportResult {
  int imported = 0;         // published now
  int already_present = 0;  // a valid entry was there (or another process published it first)
  int replaced_bad = 0;     // of imported: a bad entry was moved to quarantine first
};

// Publishes every entry of a parsed bundle into `cache`. First, before any
// entry: the root must be a cache (InvalidArgument otherwise) and every
// namespace must pass DiskCache::prepare (trust; Io), and be writable
// (Io naming why not). Then each entry under its key lock: kept when present
// and valid, else (bad ones quarantined) published. lock_timeout_s as the runtime's.
ImportResult import_bundle(const DiskCache& cache, const Bundle& bundle, double lock_timeout_s = 600);

}  // namespace hcwarm::jit
