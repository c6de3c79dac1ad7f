#pragma once
// The first layer's residual streams, materialized on the model's device:
// residual[t, i, :] = embed[t, :] for every stream i. The post step after the
// first sublayer needs them as (T, hc, D) even when the first pre read the
// embedding itself. There is no copy kernel in the library, so this is an
// hc_post call that is exact by construction: post = 1, comb = 0 and a zeroed
// residual give new_residual = 1 * embed + 0 (a -0 embedding value becomes +0,
// which no later step can tell apart).
#include <cstdint>

#include "core/device.hpp"
#include "mhc/hc_post_op.hpp"

namespace hcwarm::model {

class StreamBroadcast {
 public:
  StreamBroadcast(mhc::MhcDims dims, mhc::HcPostOp& post, Device& device);

  // Sizes the constant gates for T <= max_num_tokens now, so that no forward allocates.
  void reserve(int64_t max_num_tokens);
  // residual: (T, hc, D) bf16 on the device, overwritten; embed: (T, D) bf16. Queued on the device.
  void run(const bf16* embed, bf16* residual, int64_t num_tokens);

 private:
  mhc::MhcDims dims_;
  mhc::HcPostOp& post_;
  Device& device_;
  int64_t capacity_ = 0;
  DeviceBuffer ones_;   // (capacity, hc) f32: the post gates
  DeviceBuffer zeros_;  // (capacity, hc, hc) f32: the comb matrix
};

}  // namespace hcwarm::model
