#include "mhc/hc_pre_reference_run.hpp"

#include "core/tensor.hpp"
#include "mhc/reference.hpp"

namespace hcwarm::mhc {

void run_hc_pre_reference_on(Device& device, MhcDims dims, const MhcConstants& constants, const HcPreArgs& a) {
  const int64_t T = a.num_tokens;
  const int hc = dims.hc_mult;
  const int64_t D = dims.hidden;
  const int64_t mix = dims.mix();
  HostTensor<bf16> residual({T, hc, D});
  if (a.input == HcPreInput::Embed) {
    HostTensor<bf16> embed({T, D});
    device.copy_to_host(embed.data(), a.residual, embed.numel() * sizeof(bf16));
    residual = broadcast_streams(embed, hc);
  }
  HostTensor<float> fn({mix, dims.k()}), scale({3}), base({mix});
  HostTensor<bf16> w({D});
  if (a.input != HcPreInput::Embed) {
    device.copy_to_host(residual.data(), a.residual, residual.numel() * sizeof(bf16));
  }
  device.copy_to_host(fn.data(), a.fn, fn.numel() * sizeof(float));
  device.copy_to_host(scale.data(), a.scale, 3 * sizeof(float));
  device.copy_to_host(base.data(), a.base, mix * sizeof(float));
  if (a.norm_weight != nullptr) device.copy_to_host(w.data(), a.norm_weight, D * sizeof(bf16));
  const HostTensor<bf16>* norm = a.norm_weight != nullptr ? &w : nullptr;
  HcPreResult r;
  if (a.input == HcPreInput::Post) {
    // Every input is on the host before the new residual is written: it may alias the residual.
    HostTensor<bf16> x({T, D});
    HostTensor<float> prev_post({T, hc}), prev_comb({T, hc, hc});
    device.copy_to_host(x.data(), a.x, x.numel() * sizeof(bf16));
    device.copy_to_host(prev_post.data(), a.prev_post, prev_post.numel() * sizeof(float));
    device.copy_to_host(prev_comb.data(), a.prev_comb, prev_comb.numel() * sizeof(float));
    HcPostPreResult pp = hc_post_pre_reference(x, residual, prev_post, prev_comb, fn, scale, base, norm, constants);
    device.copy_from_host(a.new_residual, pp.new_residual.data(), pp.new_residual.numel() * sizeof(bf16));
    r = std::move(pp.pre);
  } else {
    r = hc_pre_reference(residual, fn, scale, base, norm, constants);
  }
  device.copy_from_host(a.y, r.y.data(), r.y.numel() * sizeof(bf16));
  device.copy_from_host(a.post, r.post.data(), r.post.numel() * sizeof(float));
  device.copy_from_host(a.comb, r.comb.data(), r.comb.numel() * sizeof(float));
}

}  // namespace hcwarm::mhc
