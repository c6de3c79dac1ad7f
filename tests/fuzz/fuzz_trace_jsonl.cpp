// parse_jsonl on arbitrary text: accepted requests must keep the trace contract.
#include "trace_contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hcwarm;
  fuzz::expect_only(ErrorKind::InvalidArgument,
                    [&] { fuzz::check_requests(sim::parse_jsonl(fuzz::as_text(data, size), "fuzz.jsonl")); });
  return 0;
}
