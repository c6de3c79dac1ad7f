#include "cli/byte_units.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>

#include "core/error.hpp"
#include "core/json_util.hpp"

namespace hcwarm::cli {

std::string human_bytes(uint64_t b) {
  if (b < 1024) return fmt::format("{} B", b);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = -1;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, units[u]);
}

uint64_t parse_size(const std::string& s, const std::string& option) {
  double v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  HCWARM_CHECK_ARG(ec == std::errc() && v >= 0, "{} {} is not a size (e.g. 1048576, 512M, 4G)", option, quoted_excerpt(s));
  std::string unit(p, end);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() >= 2 && unit.substr(unit.size() - 2) == "IB") unit.resize(unit.size() - 2);
  else if (!unit.empty() && unit.back() == 'B') unit.pop_back();
  double mult = 1;
  if (unit == "") mult = 1;
  else if (unit == "K") mult = 1024.0;
  else if (unit == "M") mult = 1024.0 * 1024;
  else if (unit == "G") mult = 1024.0 * 1024 * 1024;
  else if (unit == "T") mult = 1024.0 * 1024 * 1024 * 1024;
  else HCWARM_THROW(ErrorKind::InvalidArgument, "{} {}: unknown unit (use K, M, G or T)", option, quoted_excerpt(s));
  // Bounded before the conversion (a double past 2^64 has no uint64 value): 1 EiB is beyond any disk.
  HCWARM_CHECK_ARG(v * mult <= 0x1p60, "{} {} is above the limit of 1 EiB", option, quoted_excerpt(s));
  return static_cast<uint64_t>(std::llround(v * mult));
}

}  // namespace hcwarm::cli
