#pragma once
// The library's own logger, "hcwarm": stderr (stdout stays clean for --json),
// level HCWARM_LOG_LEVEL once init_logging ran (info before). hcwarm never logs
// through, or replaces, the application's default spdlog logger; an application
// that wants one stream for both may install shared_logger() as its default.
#include <spdlog/spdlog.h>

#include <memory>
#include <utility>

#include "core/env_config.hpp"

namespace hcwarm {

spdlog::logger& logger();
std::shared_ptr<spdlog::logger> shared_logger();
// Sets the logger's level from HCWARM_LOG_LEVEL.
void init_logging(const EnvConfig& env);

namespace log {
template <class... A>
void trace(spdlog::format_string_t<A...> f, A&&... a) { logger().trace(f, std::forward<A>(a)...); }
template <class... A>
void debug(spdlog::format_string_t<A...> f, A&&... a) { logger().debug(f, std::forward<A>(a)...); }
template <class... A>
void info(spdlog::format_string_t<A...> f, A&&... a) { logger().info(f, std::forward<A>(a)...); }
template <class... A>
void warn(spdlog::format_string_t<A...> f, A&&... a) { logger().warn(f, std::forward<A>(a)...); }
template <class... A>
void error(spdlog::format_string_t<A...> f, A&&... a) { logger().error(f, std::forward<A>(a)...); }
}  // namespace log

}  // namespace hcwarm
