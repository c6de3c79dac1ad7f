#include "core/logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace hcwarm {

void init_logging(const EnvConfig& env) {
  auto logger = spdlog::stderr_color_mt("hcwarm");
  logger->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(env.log_level));
}

}  // namespace hcwarm
