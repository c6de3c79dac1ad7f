// synthetic_trace_config on "synthetic:" + arbitrary text (the spec `--trace`
// takes): an accepted config has every size within its bound, and the requests
// it generates keep the trace contract. Generated only for small request counts,
// so that one input stays quick; the bounds are checked for every accepted one.
#include <string>

#include "core/limits.hpp"
#include "trace_contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hcwarm;
  fuzz::expect_only(ErrorKind::InvalidArgument, [&] {
    const sim::SyntheticTraceConfig c = sim::synthetic_trace_config("synthetic:" + std::string(fuzz::as_text(data, size)));
    HCWARM_FUZZ_CHECK(c.num_requests >= 1 && c.num_requests <= limits::kMaxRequests);
    HCWARM_FUZZ_CHECK(c.min_prompt_tokens >= 1 && c.min_prompt_tokens <= c.max_prompt_tokens &&
                      c.max_prompt_tokens <= limits::kMaxRequestTokens);
    HCWARM_FUZZ_CHECK(c.max_output_tokens >= 1 && c.max_output_tokens <= limits::kMaxRequestTokens);
    HCWARM_FUZZ_CHECK(c.arrival_rate_per_s >= limits::kMinArrivalRatePerS);
    if (c.num_requests > 4096) return;
    const std::vector<sim::Request> reqs = sim::synthetic_trace(c);
    HCWARM_FUZZ_CHECK(static_cast<int64_t>(reqs.size()) == c.num_requests);
    fuzz::check_requests(reqs);
    for (const auto& r : reqs) {
      HCWARM_FUZZ_CHECK(r.prompt_tokens >= c.min_prompt_tokens && r.prompt_tokens <= c.max_prompt_tokens);
      HCWARM_FUZZ_CHECK(r.output_tokens >= 1 && r.output_tokens <= c.max_output_tokens);
    }
  });
  return 0;
}
