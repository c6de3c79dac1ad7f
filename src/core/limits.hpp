#pragma once
// Upper bounds on every size that comes from input or options, each with its
// reason. Past one, parsing fails with ErrorKind::InvalidArgument naming the
// field and the bound (CLI exit 2), instead of looping, hanging or allocating
// without end. Then what hcwarm keeps of a child process's output and prints in
// a message, so that neither grows with its input. README.md ("Limits") lists them.
#include <cstddef>
#include <cstdint>

namespace hcwarm::limits {

// Tokens in one forward, a chunked-prefill budget or a token count: 64x
// DeepSeek V4's largest default chunk (16384), and (T, 4, 8192) bf16 stays under 16 GiB.
inline constexpr int64_t kMaxTokens = int64_t{1} << 20;
// DeepSeek V4 Pro's hidden size is 7168; the CUDA kernels stop earlier
// (hcwarm_mhc::kCudaMaxHidden in kernels/common/mhc_params.hpp).
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
// The synthetic workload's token fields too (max_output_tokens, max_prompt_tokens,
// prompt_median, output_mean, output_tail_min): past it a replay would simulate one
// request for longer than any server runs it.
inline constexpr int64_t kMaxRequestTokens = int64_t{1} << 22;
// The synthetic workload's slowest arrival rate (requests per second): one a
// fortnight; far slower ones push arrival times of a long trace to infinity.
inline constexpr double kMinArrivalRatePerS = 1e-6;

// What a child process (the host compiler) writes is kept up to this much of its
// start and of its end; the middle is dropped and counted. The first errors and
// the final summary are what a reader needs; a chatty compiler cannot grow memory.
inline constexpr size_t kMaxProcessOutputHead = size_t{64} << 10;
inline constexpr size_t kMaxProcessOutputTail = size_t{64} << 10;
// A compiler log echoed to the user or put into a message: much less, since a
// failing build echoes one per key (the whole capture stays in Error::log()).
inline constexpr size_t kMaxEchoedLogHead = size_t{4} << 10;
inline constexpr size_t kMaxEchoedLogTail = size_t{4} << 10;
// An error message the CLI prints: long enough for a path at PATH_MAX and the start
// of an echoed log, short enough that a 100 KB option value is not printed back whole.
inline constexpr size_t kMaxMessageHead = size_t{8} << 10;
inline constexpr size_t kMaxMessageTail = size_t{2} << 10;
// A command-line parse error: the option's name at the start and the reason at
// the end, with at most a few hundred bytes of the value between them.
inline constexpr size_t kMaxParseMessageHead = 320;
inline constexpr size_t kMaxParseMessageTail = 160;
// '[' in one command-line argument: CLI11 splits bracketed lists recursively,
// copying the value at each level (a 130 KB argument of nested brackets took
// 4 GB and 18 s). hcwarm's lists ("--tokens 1,2,3" or "[1,2,3]") need one.
inline constexpr size_t kMaxArgBrackets = 4;

// A kernel bundle (`hcwarm cache import`) is read whole: the default cache cap
// (HCWARM_CACHE_MAX_MB, 4096 MiB), so that a bundle of a whole cache fits.
inline constexpr uint64_t kMaxBundleBytes = uint64_t{4} << 30;
// Entries in one bundle: each is a cache directory; DeepSeek V4 Pro plans a few dozen.
inline constexpr uint64_t kMaxBundleEntries = 65536;
// A PEM key file (`cache export --sign`, `--trusted-key`): an Ed25519 key is under 200 bytes.
inline constexpr uint64_t kMaxKeyFileBytes = uint64_t{64} << 10;
// A bundle's checksum is verified reading this much at a time, before it is read whole.
inline constexpr size_t kBundleHashChunkBytes = size_t{1} << 20;

}  // namespace hcwarm::limits
