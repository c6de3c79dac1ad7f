#include <gtest/gtest.h>

#include <map>
#include <random>

#include "core/error.hpp"
#include "mhc/split_policy.hpp"

namespace hcwarm::mhc {
namespace {

// The definition, written the slow way: every T in [1, M], last T of each split count wins.
std::vector<int64_t> brute_force_representatives(int64_t max_tokens, int64_t k, int sms) {
  std::map<int, int64_t> last_by_split;
  for (int64_t t = 1; t <= max_tokens; ++t) {
    const int64_t grid = (t + 63) / 64;
    const int64_t s = std::max<int64_t>(1, std::min<int64_t>(sms / std::max<int64_t>(grid, 1), ((k + 63) / 64) / 4));
    last_by_split[static_cast<int>(s)] = t;
  }
  std::vector<int64_t> out;
  for (const auto& [split, t] : last_by_split) out.push_back(t);
  return out;
}

TEST(SplitPolicy, NumSplitsMatchesTheFormula) {
  // K = 28672 (dsv4-pro): cap = 448 / 4 = 112.
  EXPECT_EQ(num_splits(1, 28672, 132), 112);
  EXPECT_EQ(num_splits(64, 28672, 132), 112);
  EXPECT_EQ(num_splits(65, 28672, 132), 66);
  EXPECT_EQ(num_splits(8192, 28672, 132), 1);
  EXPECT_EQ(num_splits(0, 28672, 132), 112);  // grid 0 counts as 1
  EXPECT_EQ(num_splits(1, 28672, 148), 112);
  EXPECT_EQ(num_splits(65, 28672, 148), 74);
  EXPECT_EQ(num_splits(1, 64, 132), 1);       // cap 0 clamps to 1
}

TEST(SplitPolicy, Dsv4ProOnH200HasTheTwentyTwoReferenceBuckets) {
  const std::vector<int64_t> expected{16384, 4224, 2816, 2112, 1664, 1408, 1152, 1024, 896, 832, 768,
                                      704,   640,  576,  512,  448,  384,  320,  256,  192,  128, 64};
  EXPECT_EQ(representatives(16384, 28672, 132), expected);
  const auto buckets = split_buckets(16384, 28672, 132);
  ASSERT_EQ(buckets.size(), 22u);
  EXPECT_EQ(buckets.front().num_splits, 1);
  EXPECT_EQ(buckets.front().min_tokens, 4225);
  EXPECT_EQ(buckets.back().num_splits, 112);
  EXPECT_EQ(buckets.back().min_tokens, 1);
  // Buckets tile [1, M] without gaps, split counts strictly ascending.
  for (size_t i = 1; i < buckets.size(); ++i) {
    EXPECT_EQ(buckets[i].max_tokens + 1, buckets[i - 1].min_tokens);
    EXPECT_LT(buckets[i - 1].num_splits, buckets[i].num_splits);
  }
}

TEST(SplitPolicy, EmptyForNonPositiveMax) {
  EXPECT_TRUE(representatives(0, 28672, 132).empty());
  EXPECT_TRUE(representatives(-5, 28672, 132).empty());
  EXPECT_TRUE(split_buckets(0, 16384, 148).empty());
}

TEST(SplitPolicy, AgreesWithBruteForceOverManyCombinations) {
  const std::vector<int64_t> ks{64, 128, 255, 256, 1000, 4096, 16384, 28672, 65536};
  const std::vector<int> sms_list{1, 2, 3, 7, 78, 108, 132, 148, 1000};
  std::vector<int64_t> maxes{1, 2, 63, 64, 65, 127, 128, 129, 4224, 4225, 8192, 16384};
  for (int64_t k : ks) {
    for (int sms : sms_list) {
      std::vector<int64_t> m_list = maxes;
      // Every bucket edge of this combination, and one past it.
      for (const auto& b : split_buckets(20000, k, sms)) {
        m_list.push_back(b.max_tokens);
        m_list.push_back(b.max_tokens + 1);
      }
      for (int64_t m : m_list) {
        ASSERT_EQ(representatives(m, k, sms), brute_force_representatives(m, k, sms))
            << "K=" << k << " sms=" << sms << " max=" << m;
      }
    }
  }
}

TEST(SplitPolicy, AgreesWithBruteForceAtOneMillionTokens) {
  for (int sms : {132, 148}) {
    EXPECT_EQ(representatives(1'000'000, 28672, sms), brute_force_representatives(1'000'000, 28672, sms));
  }
  EXPECT_EQ(representatives(1'000'000, 16384, 132), brute_force_representatives(1'000'000, 16384, 132));
}

TEST(SplitPolicy, RandomCombinations) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 300; ++i) {
    const int64_t k = 1 + static_cast<int64_t>(rng() % 100000);
    const int sms = 1 + static_cast<int>(rng() % 300);
    const int64_t m = 1 + static_cast<int64_t>(rng() % 30000);
    ASSERT_EQ(representatives(m, k, sms), brute_force_representatives(m, k, sms))
        << "K=" << k << " sms=" << sms << " max=" << m;
  }
}

TEST(SplitPolicy, RejectsBadArguments) {
  EXPECT_THROW(num_splits(-1, 28672, 132), Error);
  EXPECT_THROW(num_splits(1, 0, 132), Error);
  EXPECT_THROW(num_splits(1, 28672, 0), Error);
  EXPECT_THROW(split_buckets(10, -1, 132), Error);
  EXPECT_THROW(representatives(10, 28672, -3), Error);
}

}  // namespace
}  // namespace hcwarm::mhc
