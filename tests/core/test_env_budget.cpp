// The compile-thread budget from the environment: HCWARM_JOBS when given, else
// the hardware threads divided among the local ranks (HCWARM_LOCAL_WORLD_SIZE,
// else torchrun's LOCAL_WORLD_SIZE, else 1), never below one.
#include <gtest/gtest.h>

#include "core/env_config.hpp"
#include "core/error.hpp"

namespace hcwarm {
namespace {

int budget(const std::map<std::string, std::string>& vars, int hardware_threads) {
  return EnvConfig::from_map(vars, hardware_threads).compile_jobs;
}

TEST(EnvBudget, HardwareThreadsDividedAmongLocalRanks) {
  EXPECT_EQ(budget({}, 128), 128);
  EXPECT_EQ(budget({{"LOCAL_WORLD_SIZE", "8"}}, 128), 16);
  EXPECT_EQ(budget({{"HCWARM_LOCAL_WORLD_SIZE", "4"}}, 128), 32);
  EXPECT_EQ(budget({{"HCWARM_LOCAL_WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "8"}}, 128), 32);  // ours first
  EXPECT_EQ(budget({{"LOCAL_WORLD_SIZE", "3"}}, 16), 5);   // rounded down
  EXPECT_EQ(budget({{"LOCAL_WORLD_SIZE", "8"}}, 2), 1);    // at least one
  EXPECT_EQ(EnvConfig::from_map({{"LOCAL_WORLD_SIZE", "8"}}, 128).local_world_size, 8);
  EXPECT_EQ(EnvConfig::from_map({}, 128).local_world_size, 1);
}

TEST(EnvBudget, HcwarmJobsWins) {
  EXPECT_EQ(budget({{"HCWARM_JOBS", "3"}, {"LOCAL_WORLD_SIZE", "8"}}, 128), 3);
  EXPECT_EQ(budget({{"HCWARM_JOBS", "200"}}, 4), 200);
  EXPECT_EQ(budget({{"HCWARM_JOBS", "0"}, {"LOCAL_WORLD_SIZE", "2"}}, 8), 4);  // 0: the default rule
  EXPECT_EQ(EnvConfig::compile_budget(0, 1, 0), 1);
}

TEST(EnvBudget, BadLocalWorldSizeNamesTheVariable) {
  for (const char* k : {"HCWARM_LOCAL_WORLD_SIZE", "LOCAL_WORLD_SIZE"}) {
    for (const char* v : {"0", "-2", "eight", "8 ", "", "99999999999"}) {
      try {
        EnvConfig::from_map({{k, v}}, 8);
        ADD_FAILURE() << k << "=" << v << " accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
        EXPECT_EQ(e.message().rfind(std::string(k) + "=", 0), 0u) << e.message();
        EXPECT_NE(e.message().find("is not an integer in [1, 65536]"), std::string::npos) << e.message();
      }
    }
  }
  // A bad value of ours is reported even when torchrun's is fine.
  EXPECT_THROW(EnvConfig::from_map({{"HCWARM_LOCAL_WORLD_SIZE", "x"}, {"LOCAL_WORLD_SIZE", "2"}}, 8), Error);
}

TEST(EnvBudget, GivenListsTorchrunsVariable) {
  const auto c = EnvConfig::from_map({{"LOCAL_WORLD_SIZE", "2"}}, 8);
  EXPECT_NE(std::find(c.given.begin(), c.given.end(), "LOCAL_WORLD_SIZE"), c.given.end());
}

}  // namespace
}  // namespace hcwarm
