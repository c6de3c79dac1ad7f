#pragma once
// Upper bounds on every size that comes from input or options, each with its
// reason. Past one, parsing fails with ErrorKind::InvalidArgument naming the
// field and the bound (CLI exit 2), instead of looping, hanging or allocating
// without end. README.md ("Limits") lists them.
#include <cstdint>

namespace hcwarm::limits {

// Tokens in one forward, a chunked-prefill budget or a token count: 64x
// DeepSeek V4's largest default chunk (16384), and (T, 4, 8192) bf16 stays under 16 GiB.
inline constexpr int64_t kMaxTokens = int64_t{1} << 20;
// DeepSeek V4 Pro's hidden size is 7168; the CUDA kernels stop at 8192.
inline constexpr int64_t kMaxHiddenSize = 65536;
// Residual streams: 4 in DeepSeek V4; the kernels' mix rows grow as hc^2.
inline constexpr int64_t kMaxHcMult = 16;
// Decoder layers: DeepSeek V4 Pro has 61.
inline constexpr int64_t kMaxLayers = 1024;
// Sinkhorn iterations: 20 in DeepSeek V4; each is a serial step of every call.
inline constexpr int64_t kMaxSinkhornIters = 1000;
// The stand-in SwiGLU sublayer's width.
inline constexpr int64_t kMaxMlpWidth = 65536;
// Requests in a trace or a synthetic workload: a replay simulates each of them.
inline constexpr int64_t kMaxRequests = int64_t{1} << 22;
// Prompt or output tokens of one request in a trace: a million-token context, 4x over.
inline constexpr int64_t kMaxRequestTokens = int64_t{1} << 22;

// A kernel bundle (`hcwarm cache import`) is read whole: the default cache cap
// (HCWARM_CACHE_MAX_MB, 4096 MiB), so that a bundle of a whole cache fits.
inline constexpr uint64_t kMaxBundleBytes = uint64_t{4} << 30;
// Entries in one bundle: each is a cache directory; DeepSeek V4 Pro plans a few dozen.
inline constexpr uint64_t kMaxBundleEntries = 65536;

}  // namespace hcwarm::limits
