// parse_model_config on arbitrary text: an accepted config must hold values
// inside the documented limits (core/limits.hpp).
#include <string>

#include "core/limits.hpp"
#include "fuzz_util.hpp"
#include "model/model_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hcwarm;
  fuzz::expect_only(ErrorKind::InvalidArgument, [&] {
    const auto c = model::parse_model_config(std::string(fuzz::as_text(data, size)), "fuzz/config.json");
    HCWARM_FUZZ_CHECK(c.hidden_size >= 1 && c.hidden_size <= limits::kMaxHiddenSize);
    HCWARM_FUZZ_CHECK(c.hc_mult >= 1 && c.hc_mult <= limits::kMaxHcMult);
    HCWARM_FUZZ_CHECK(c.num_hidden_layers >= 1 && c.num_hidden_layers <= limits::kMaxLayers);
    HCWARM_FUZZ_CHECK(c.hc_sinkhorn_iters >= 1 && c.hc_sinkhorn_iters <= limits::kMaxSinkhornIters);
    HCWARM_FUZZ_CHECK(c.hc_eps >= 0 && c.rms_norm_eps > 0 && c.num_nextn_predict_layers >= 0);
    HCWARM_FUZZ_CHECK(!c.sliding_window || *c.sliding_window > 0);
    for (int r : c.compress_ratios) HCWARM_FUZZ_CHECK(r >= 0);
  });
  return 0;
}
