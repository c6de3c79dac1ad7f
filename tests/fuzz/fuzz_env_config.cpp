// EnvConfig::from_map on arbitrary variables, one NAME=VALUE per line (a line
// without '=' is a name with an empty value): accepted values stay in range.
#include <map>
#include <string>

#include "core/env_config.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hcwarm;
  std::map<std::string, std::string> vars;
  std::string_view text = fuzz::as_text(data, size);
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    const size_t eq = line.find('=');
    vars[std::string(line.substr(0, eq))] = eq == std::string_view::npos ? "" : std::string(line.substr(eq + 1));
  }
  fuzz::expect_only(ErrorKind::InvalidArgument, [&] {
    const EnvConfig c = EnvConfig::from_map(vars);
    HCWARM_FUZZ_CHECK(c.cache_max_bytes >= (uint64_t{1} << 20) && c.jobs >= 0 && c.jobs <= 1024);
    HCWARM_FUZZ_CHECK(!c.num_sms || (*c.num_sms >= 1 && *c.num_sms <= 100000));
    HCWARM_FUZZ_CHECK(!c.host_cxx.empty() && !c.log_level.empty());
  });
  return 0;
}
