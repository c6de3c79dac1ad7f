#pragma once
// The split-K rule of the fast mHC pre kernels (docs/MATH.md, section 4) and the split
// buckets it induces. Every distinct split count is a distinct compiled kernel,
// so this file decides what warmup must compile.
#include <cstdint>
#include <vector>

namespace hcwarm::mhc {

// Tokens per block row of the prenorm GEMM; the "64" of grid = ceil(T / 64).
inline constexpr int64_t kTokensPerBlock = 64;

// num_splits = max(1, min(sms / max(grid, 1), ceil(K / 64) / 4)), grid = ceil(T / 64).
// T = num_tokens >= 0, K = hc_hidden_size > 0, sms > 0 (checked).
int num_splits(int64_t num_tokens, int64_t hc_hidden_size, int num_sms);

struct SplitBucket {
  int num_splits = 0;
  int64_t min_tokens = 0;  // inclusive
  int64_t max_tokens = 0;  // inclusive; also the bucket's representative
  int64_t representative() const { return max_tokens; }
};

// The buckets over T in [1, max_num_tokens], ordered by num_splits ascending
// (largest token counts first); empty for max_num_tokens <= 0. Runs in time
// proportional to the number of buckets, not to max_num_tokens.
std::vector<SplitBucket> split_buckets(int64_t max_num_tokens, int64_t hc_hidden_size, int num_sms);

// One token count per bucket: the largest of its bucket, by num_splits ascending.
std::vector<int64_t> representatives(int64_t max_num_tokens, int64_t hc_hidden_size, int num_sms);

}  // namespace hcwarm::mhc
