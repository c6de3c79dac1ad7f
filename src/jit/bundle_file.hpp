#pragma once
// A kernel bundle file on its way into a cache (`hcwarm cache import`): opened
// once, its trailing checksum verified by reading it in bounded chunks, so that
// a huge or damaged file is refused without holding it in memory; only then is
// it read whole, from the same descriptor, for parse_bundle.
#include <cstdint>
#include <filesystem>
#include <string>

#include "core/unique_fd.hpp"
#include "jit/cache_bundle.hpp"

namespace hcwarm::jit {

class BundleFile {
 public:
  // Opens `path` (a regular file of at most limits.max_bytes, starting with the
  // bundle magic), reads its trailer and checks the checksum against every byte
  // before it, kBundleHashChunkBytes at a time. InvalidArgument "<path>: ..."
  // naming what is wrong (not a file, too large, not a bundle, truncated,
  // checksum mismatch, malformed signature).
  explicit BundleFile(const std::filesystem::path& path, const BundleLimits& limits = {});

  // The verified trailer: checksum and, when signed, the (unverified) signature.
  const BundleTrailer& trailer() const { return trailer_; }
  uint64_t size() const { return size_; }
  // The largest single read the verification made (bounded memory, for tests).
  uint64_t largest_read() const { return largest_read_; }

  // The whole file, read again from the same descriptor. The caller parses it
  // with parse_bundle and must compare its checksum with trailer().sha256: a
  // file rewritten in place meanwhile differs there.
  std::string read_all() const;

 private:
  std::string source_;
  UniqueFd fd_;
  uint64_t size_ = 0;
  uint64_t largest_read_ = 0;
  BundleTrailer trailer_;
};

}  // namespace hcwarm::jit
