#pragma once
// The double-precision CPU reference of hc_pre, hc_post and the head (docs/MATH.md, sections 2, 3, 6):
// the oracle every fast kernel is tested against. Slow on purpose: clarity over speed.
#include <optional>

#include "core/tensor.hpp"
#include "mhc/mhc_types.hpp"

namespace hcwarm::mhc {

struct HcPreResult {
  HostTensor<bf16> y;      // (T, D)
  HostTensor<float> post;  // (T, hc)
  HostTensor<float> comb;  // (T, hc, hc)
  bool norm_fused = false;
};

// Validates every shape against residual (T, hc, D); a mismatch throws
// ErrorKind::InvalidArgument naming the tensor.
void check_hc_pre_shapes(const HostTensor<bf16>& residual, const HostTensor<float>& fn,
                         const HostTensor<float>& scale, const HostTensor<float>& base,
                         const HostTensor<bf16>* norm_weight);

// The same for the first layer's embedding (T, D) standing for hc streams.
void check_hc_pre_embed_shapes(const HostTensor<bf16>& embed, int hc, const HostTensor<float>& fn,
                               const HostTensor<float>& scale, const HostTensor<float>& base,
                               const HostTensor<bf16>* norm_weight);

HcPreResult hc_pre_reference(const HostTensor<bf16>& residual, const HostTensor<float>& fn,
                             const HostTensor<float>& scale, const HostTensor<float>& base,
                             const HostTensor<bf16>* norm_weight, const MhcConstants& constants);

// new_residual[t, j, :] = post[t, j] * out[t, :] + sum_i comb[t, i, j] * residual[t, i, :]
HostTensor<bf16> hc_post_reference(const HostTensor<bf16>& out, const HostTensor<bf16>& residual,
                                   const HostTensor<float>& post, const HostTensor<float>& comb);

// The head (docs/MATH.md, section 6): residual (T, hc, D) -> y (T, D) bf16 with
// fn (hc, hc*D), scale (1,) and base (hc,); no Sinkhorn, no post gates.
void check_hc_head_shapes(const HostTensor<bf16>& residual, const HostTensor<float>& fn,
                          const HostTensor<float>& scale, const HostTensor<float>& base);
HostTensor<bf16> hc_head_reference(const HostTensor<bf16>& residual, const HostTensor<float>& fn,
                                   const HostTensor<float>& scale, const HostTensor<float>& base,
                                   const MhcConstants& constants);

// The first layer's streams: hc copies of the embedding (T, D) as (T, hc, D).
HostTensor<bf16> broadcast_streams(const HostTensor<bf16>& embed, int hc);
// hc_pre of the first layer, from the embedding: hc_pre_reference on its hc copies.
HcPreResult hc_pre_embed_reference(const HostTensor<bf16>& embed, int hc, const HostTensor<float>& fn,
                                   const HostTensor<float>& scale, const HostTensor<float>& base,
                                   const HostTensor<bf16>* norm_weight, const MhcConstants& constants);

// The fused sublayer boundary (docs/MATH.md, section 6): the post step of the
// previous sublayer, rounded to bf16 as it is stored, then hc_pre on it.
struct HcPostPreResult {
  HostTensor<bf16> new_residual;  // (T, hc, D)
  HcPreResult pre;                // y, post, comb of the pre step on new_residual
};

// Validates x (T, D), prev_post (T, hc) and prev_comb (T, hc, hc) against residual
// (T, hc, D), then the pre step's tensors as check_hc_pre_shapes; a mismatch throws
// ErrorKind::InvalidArgument naming the tensor and both shapes.
void check_hc_post_pre_shapes(const HostTensor<bf16>& x, const HostTensor<bf16>& residual,
                              const HostTensor<float>& prev_post, const HostTensor<float>& prev_comb,
                              const HostTensor<float>& fn, const HostTensor<float>& scale,
                              const HostTensor<float>& base, const HostTensor<bf16>* norm_weight);

// new_residual = bf16(post step in double), then hc_pre_reference(new_residual, ...).
HcPostPreResult hc_post_pre_reference(const HostTensor<bf16>& x, const HostTensor<bf16>& residual,
                                      const HostTensor<float>& prev_post, const HostTensor<float>& prev_comb,
                                      const HostTensor<float>& fn, const HostTensor<float>& scale,
                                      const HostTensor<float>& base, const HostTensor<bf16>* norm_weight,
                                      const MhcConstants& constants);

// The Sinkhorn projection of one hc x hc logit matrix (row-major), in place.
void sinkhorn_reference(double* c, int hc, int iters, double eps);

}  // namespace hcwarm::mhc
