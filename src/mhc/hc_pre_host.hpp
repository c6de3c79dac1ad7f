#pragma once
// HcPreOp on host tensors (the CLI and tests): the inputs copied to the op's
// device, one call, a synchronize and the outputs copied back. Shapes are
// checked first.
#include "core/device.hpp"
#include "core/tensor.hpp"
#include "mhc/reference.hpp"

namespace hcwarm::mhc {

class HcPreOp;

HcPreResult run_hc_pre_host(HcPreOp& op, Device& device, const HostTensor<bf16>& residual,
                            const HostTensor<float>& fn, const HostTensor<float>& scale,
                            const HostTensor<float>& base, const HostTensor<bf16>* norm_weight);

// The first layer's hc_pre on host tensors: the embedding (T, D) as input Embed.
HcPreResult run_hc_pre_embed_host(HcPreOp& op, Device& device, const HostTensor<bf16>& embed,
                                  const HostTensor<float>& fn, const HostTensor<float>& scale,
                                  const HostTensor<float>& base, const HostTensor<bf16>* norm_weight);

// The fused sublayer boundary on host tensors (input Post), as run_hc_pre_host:
// shapes checked first (check_hc_post_pre_shapes), then the new residual and
// the pre step's outputs.
HcPostPreResult run_hc_post_pre_host(HcPreOp& op, Device& device, const HostTensor<bf16>& x,
                                     const HostTensor<bf16>& residual, const HostTensor<float>& prev_post,
                                     const HostTensor<float>& prev_comb, const HostTensor<float>& fn,
                                     const HostTensor<float>& scale, const HostTensor<float>& base,
                                     const HostTensor<bf16>* norm_weight);

}  // namespace hcwarm::mhc
