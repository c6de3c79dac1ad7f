#include "core/logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace hcwarm {

std::shared_ptr<spdlog::logger> shared_logger() {
  // Not registered in spdlog's registry: an application's loggers and names stay its own.
  static const std::shared_ptr<spdlog::logger> instance = [] {
    auto l = std::make_shared<spdlog::logger>("hcwarm", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    l->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
    l->set_level(spdlog::level::info);
    return l;
  }();
  return instance;
}

spdlog::logger& logger() { return *shared_logger(); }

void init_logging(const EnvConfig& env) { logger().set_level(spdlog::level::from_str(env.log_level)); }

}  // namespace hcwarm
