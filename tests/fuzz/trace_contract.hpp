#pragma once
// What parse_jsonl and parse_azure_csv promise for the requests they return
// (sim/trace.hpp): sorted by arrival, finite non-negative arrivals, token
// counts inside the limits, ids that are the requests' positions in the source.
#include <cmath>
#include <vector>

#include "core/limits.hpp"
#include "fuzz_util.hpp"
#include "sim/trace.hpp"

namespace hcwarm::fuzz {

inline void check_requests(const std::vector<sim::Request>& reqs) {
  HCWARM_FUZZ_CHECK(!reqs.empty() && reqs.size() <= static_cast<size_t>(limits::kMaxRequests));
  std::vector<bool> seen(reqs.size(), false);
  for (size_t i = 0; i < reqs.size(); ++i) {
    const auto& r = reqs[i];
    HCWARM_FUZZ_CHECK(std::isfinite(r.arrival_s) && r.arrival_s >= 0);
    HCWARM_FUZZ_CHECK(i == 0 || reqs[i - 1].arrival_s <= r.arrival_s);
    HCWARM_FUZZ_CHECK(r.prompt_tokens >= 1 && r.prompt_tokens <= limits::kMaxRequestTokens);
    HCWARM_FUZZ_CHECK(r.output_tokens >= 0 && r.output_tokens <= limits::kMaxRequestTokens);
    HCWARM_FUZZ_CHECK(r.id >= 0 && static_cast<size_t>(r.id) < reqs.size() && !seen[static_cast<size_t>(r.id)]);
    seen[static_cast<size_t>(r.id)] = true;
  }
}

}  // namespace hcwarm::fuzz
