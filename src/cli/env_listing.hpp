#pragma once
// The effective configuration: every variable EnvConfig reads, with the value
// in effect, whether the environment set it, and what the value means when
// that is not plain.
#include <string>
#include <vector>

#include "core/env_config.hpp"

namespace hcwarm::cli {

struct EnvSetting {
  std::string name;   // "HCWARM_JOBS"
  std::string value;  // as the variable would be written ("" for unset paths and counts)
  bool set = false;   // present in this process's environment
  std::string note;   // "hardware threads (16)", "" when the value says it all
};

std::vector<EnvSetting> env_settings(const EnvConfig& env);

}  // namespace hcwarm::cli
