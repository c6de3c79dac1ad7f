#pragma once
#include "core/env_config.hpp"

namespace hcwarm {
// Routes spdlog's default logger to stderr (stdout stays clean for --json) at
// the level HCWARM_LOG_LEVEL names.
void init_logging(const EnvConfig& env);
}  // namespace hcwarm
