#include "backends/cpu/hc_post_cpu.hpp"

#include <vector>

#include "kernels/cpu/mhc_post.hpp"

namespace hcwarm::cpu {

void CpuHcPostBackend::launch(const backends::HcPostParams& p, const LaunchContext&, bool) {
  const int hc = p.hc_mult;
  const int64_t d = p.hidden;
  auto body = [&](int64_t t0, int64_t t1) {
    std::vector<float> r(static_cast<size_t>(hc));
    std::vector<bf16> out(static_cast<size_t>(hc));
    for (int64_t t = t0; t < t1; ++t) {
      const float* post = p.post + t * hc;
      const float* comb = p.comb + t * hc * hc;
      const bf16* res = p.residual_in + t * hc * d;
      bf16* dst = p.residual_out + t * hc * d;
      for (int64_t e = 0; e < d; ++e) {
        // The arithmetic of the fused boundary (kernels/cpu/mhc_post.hpp), so both store the same bits.
        for (int i = 0; i < hc; ++i) r[i] = res[i * d + e].to_float();
        const float x = p.out[t * d + e].to_float();
        for (int j = 0; j < hc; ++j) {
          out[j] = bf16::from_float(hcwarm_kernels::cpu::post_value(hc, j, post, comb, x, r.data()));
        }
        // All hc inputs of (t, e) are read before its outputs are written (residual_out may alias).
        for (int j = 0; j < hc; ++j) dst[j * d + e] = out[j];
      }
    }
  };
  if (pool_) {
    pool_->parallel_for(p.num_tokens, 16, body);
  } else {
    body(0, p.num_tokens);
  }
}

}  // namespace hcwarm::cpu
