#include "cli/bench_hosts.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sched.h>

#include <cerrno>
#include <charconv>

#include "core/error.hpp"

namespace hcwarm::cli {

std::vector<std::vector<int>> cpu_slices(int hosts) {
  HCWARM_CHECK_ARG(hosts >= 1, "--hosts must be positive, got {}", hosts);
  cpu_set_t set;
  CPU_ZERO(&set);
  HCWARM_CHECK_SYS(::sched_getaffinity(0, sizeof set, &set), "sched_getaffinity");
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  const int n = static_cast<int>(cpus.size());
  std::vector<std::vector<int>> slices(static_cast<size_t>(hosts));
  if (n >= hosts) {
    for (int i = 0; i < n; ++i) slices[static_cast<size_t>(static_cast<int64_t>(i) * hosts / n)].push_back(cpus[i]);
  } else {
    for (int h = 0; h < hosts; ++h) slices[static_cast<size_t>(h)].push_back(cpus[static_cast<size_t>(h % n)]);
  }
  return slices;
}

std::string cpu_list(const std::vector<int>& cpus) { return fmt::format("{}", fmt::join(cpus, ",")); }

void pin_to_cpus(const std::string& list) {
  cpu_set_t set;
  CPU_ZERO(&set);
  size_t at = 0;
  while (at <= list.size()) {
    const size_t end = std::min(list.find(',', at), list.size());
    int c = -1;
    const auto [p, ec] = std::from_chars(list.data() + at, list.data() + end, c);
    HCWARM_CHECK_ARG(ec == std::errc() && p == list.data() + end && c >= 0 && c < CPU_SETSIZE,
                     "--child-cpus {}: not a comma-separated list of CPU numbers", list);
    CPU_SET(c, &set);
    at = end + 1;
  }
  HCWARM_CHECK_ARG(::sched_setaffinity(0, sizeof set, &set) == 0, "--child-cpus {}: {}", list, errno_string(errno));
}

}  // namespace hcwarm::cli
