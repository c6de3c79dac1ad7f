// hcwarm logs through its own logger and leaves the application's default alone.
#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "core/logging.hpp"

namespace hcwarm::test {
namespace {

TEST(Logging, LibraryNeverTouchesTheApplicationsDefaultLogger) {
  const auto app_default = spdlog::default_logger();
  const auto app_level = app_default->level();
  init_logging(EnvConfig::from_map({{"HCWARM_LOG_LEVEL", "error"}}));
  EXPECT_EQ(spdlog::default_logger(), app_default);
  EXPECT_EQ(app_default->level(), app_level);
  EXPECT_EQ(logger().level(), spdlog::level::err);
  EXPECT_NE(shared_logger(), app_default);
  EXPECT_EQ(logger().name(), "hcwarm");
  init_logging(EnvConfig::from_map({}));
  EXPECT_EQ(logger().level(), spdlog::level::info);
  LogCapture capture;
  log::warn("seen by the capture: {}", 42);
  spdlog::default_logger()->warn("the application's own message");
  EXPECT_EQ(capture.count(spdlog::level::warn, "seen by the capture: 42"), 1);
  EXPECT_EQ(capture.count(spdlog::level::warn, "application"), 0);
}

}  // namespace
}  // namespace hcwarm::test
