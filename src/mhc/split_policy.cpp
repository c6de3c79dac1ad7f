#include "mhc/split_policy.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"

namespace hcwarm::mhc {
namespace {

void check_args(int64_t hc_hidden_size, int num_sms) {
  HCWARM_CHECK_ARG(hc_hidden_size > 0, "hc_hidden_size must be positive, got {}", hc_hidden_size);
  HCWARM_CHECK_ARG(num_sms > 0, "num_sms must be positive, got {}", num_sms);
}

int64_t split_cap(int64_t hc_hidden_size) {
  return (hc_hidden_size + kTokensPerBlock - 1) / kTokensPerBlock / 4;
}

}  // namespace

int num_splits(int64_t num_tokens, int64_t hc_hidden_size, int num_sms) {
  check_args(hc_hidden_size, num_sms);
  HCWARM_CHECK_ARG(num_tokens >= 0, "num_tokens must be >= 0, got {}", num_tokens);
  const int64_t grid = (num_tokens + kTokensPerBlock - 1) / kTokensPerBlock;
  const int64_t by_sms = num_sms / std::max<int64_t>(grid, 1);
  return static_cast<int>(std::max<int64_t>(1, std::min(by_sms, split_cap(hc_hidden_size))));
}

std::vector<SplitBucket> split_buckets(int64_t max_num_tokens, int64_t hc_hidden_size, int num_sms) {
  check_args(hc_hidden_size, num_sms);
  std::vector<SplitBucket> buckets;
  if (max_num_tokens <= 0) return buckets;

  // Walk the grid sizes g = ceil(T / 64) in runs of equal split count. For a
  // quotient q = sms / g, the last g with the same quotient is sms / q; the
  // clamps at the cap and at 1 each cover one run. Every iteration emits one
  // bucket, so the loop runs once per bucket.
  const int64_t cap = split_cap(hc_hidden_size);
  const int64_t sms = num_sms;
  constexpr int64_t kForever = std::numeric_limits<int64_t>::max() / kTokensPerBlock;
  int64_t g = 1;
  while (true) {
    const int64_t q = sms / g;
    int64_t splits = 0;
    int64_t g_end = 0;
    if (cap <= 1 || q <= 1) {
      splits = 1;
      g_end = kForever;
    } else if (q >= cap) {
      splits = cap;
      g_end = sms / cap;
    } else {
      splits = q;
      g_end = sms / q;
    }
    const int64_t first = (g - 1) * kTokensPerBlock + 1;
    const int64_t last = std::min(g_end * kTokensPerBlock, max_num_tokens);
    buckets.push_back(SplitBucket{static_cast<int>(splits), first, last});
    if (last >= max_num_tokens) break;
    g = g_end + 1;
  }
  std::reverse(buckets.begin(), buckets.end());
  return buckets;
}

std::vector<int64_t> representatives(int64_t max_num_tokens, int64_t hc_hidden_size, int num_sms) {
  std::vector<int64_t> out;
  for (const SplitBucket& b : split_buckets(max_num_tokens, hc_hidden_size, num_sms)) {
    out.push_back(b.representative());
  }
  return out;
}

}  // namespace hcwarm::mhc
