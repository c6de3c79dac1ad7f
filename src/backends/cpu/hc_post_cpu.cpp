#include "backends/cpu/hc_post_cpu.hpp"

#include <vector>

namespace hcwarm::cpu {

void CpuHcPostBackend::launch(const backends::HcPostParams& p, const LaunchContext&, bool) {
  const int hc = p.hc_mult;
  const int64_t d = p.hidden;
  auto body = [&](int64_t t0, int64_t t1) {
    std::vector<float> acc(static_cast<size_t>(hc) * d);
    for (int64_t t = t0; t < t1; ++t) {
      const float* post = p.post + t * hc;
      const float* comb = p.comb + t * hc * hc;
      for (int j = 0; j < hc; ++j) {
        for (int64_t e = 0; e < d; ++e) acc[j * d + e] = post[j] * p.out[t * d + e].to_float();
      }
      for (int i = 0; i < hc; ++i) {
        const bf16* r = p.residual_in + (t * hc + i) * d;
        for (int j = 0; j < hc; ++j) {
          const float w = comb[i * hc + j];
          for (int64_t e = 0; e < d; ++e) acc[j * d + e] += w * r[e].to_float();
        }
      }
      // All inputs of token t are read before any of its outputs is written (residual_out may alias).
      for (int64_t i = 0; i < hc * d; ++i) p.residual_out[t * hc * d + i] = bf16::from_float(acc[i]);
    }
  };
  if (pool_) {
    pool_->parallel_for(p.num_tokens, 16, body);
  } else {
    body(0, p.num_tokens);
  }
}

}  // namespace hcwarm::cpu
