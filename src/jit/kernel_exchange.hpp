#pragma once
// Compile each planned kernel once per job, whatever the host layout: rank r of
// N compiles keys r, r+N, ... into its cache, the ranks all-gather what they
// built through their process group (the caller's transport), and each rank
// verifies every received entry as `cache import` verifies a bundle and
// publishes it into its own cache (key lock, staging, rename). Ranks whose
// cache is the same directory skip each other's entries: those are already there.
//
// Payload, one per rank, every number decimal ASCII:
//
//   hcwarm-kernel-exchange 1\n
//   <H>\n
//   <header JSON, H bytes>\n    {"rank", "world", "cache" (the cache directory's identity),
//                                "plan" (digest of the planned keys), "hcwarm_version",
//                                ["error" (the rank could not build its share at all)],
//                                "failed": [{"key", "error"}], "entries": [{"key", "bytes"}]}
//   <entries>                   per header entry, in order: a kernel bundle
//                               (cache_bundle.hpp) holding that one entry
//
// Trust: entries are taken from the job's own group only, as from a shared
// cache directory; each is still checked whole (checksums, manifest, version,
// namespace and the key the sender was to build) before it is published.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "jit/jit_runtime.hpp"

namespace hcwarm::jit {

inline constexpr int kExchangeFormat = 1;

// Every rank's payload, in rank order (result[rank] is `mine`). A collective:
// every rank of the group calls it once per exchange. Bounded by the
// transport's own timeout; it throws (Timeout naming the wait, or whatever
// the transport raises) rather than return fewer payloads.
using GatherBytes = std::function<std::vector<std::string>(const std::string& mine)>;

struct ExchangeReport {
  int rank = 0;
  int world = 1;
  int planned_keys = 0;                 // distinct keys of the plan, across the group
  std::vector<std::string> shard_keys;  // the keys this rank was to build
  int compiled = 0;                     // of the shard: compiled here
  int shard_present = 0;                // of the shard: already in this rank's cache
  int received = 0;                     // other ranks' entries published into this rank's cache
  int already_present = 0;              // other ranks' entries the cache held already (a rank of this host was first)
  int shared = 0;                       // other ranks' entries on this very cache directory: nothing to publish
  // "<key> from rank <r>: <why>", one per entry refused or not sent; the later
  // prewarm compiles each such key here.
  std::vector<std::string> refused;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  double build_seconds = 0;     // compiling the shard
  double exchange_seconds = 0;  // the gather, then verifying and publishing
};

// The exchange for `specs` (the plan every rank computes alike; duplicate keys
// count once). Throws InvalidArgument for rank/world out of range, a gather
// that returns the wrong count, or a group whose ranks planned different keys;
// Compile (after the gather, so that no rank waits for one that gave up) when
// any rank failed to build a key of its shard, naming the key and the rank.
// Without a writable disk cache this rank sends nothing: the others compile
// its shard themselves, and it compiles every key in the later prewarm.
ExchangeReport exchange_kernels(JitRuntime& jit, std::span<const KernelSpec> specs, int rank, int world,
                                const GatherBytes& gather);

}  // namespace hcwarm::jit
