#include "model/stream_broadcast.hpp"

#include <vector>

#include "core/error.hpp"

namespace hcwarm::model {

StreamBroadcast::StreamBroadcast(mhc::MhcDims dims, mhc::HcPostOp& post, Device& device)
    : dims_(dims), post_(post), device_(device) {}

void StreamBroadcast::reserve(int64_t max_num_tokens) {
  if (max_num_tokens <= capacity_) return;
  const size_t gates = static_cast<size_t>(max_num_tokens) * dims_.hc_mult;
  // Buffers a queued call may still read: let it finish before they go.
  if (capacity_ > 0) device_.synchronize();
  const std::vector<float> ones(gates, 1.0f);
  ones_ = DeviceBuffer(device_, gates * sizeof(float));
  device_.copy_from_host(ones_.get(), ones.data(), ones_.bytes());
  zeros_ = DeviceBuffer(device_, gates * dims_.hc_mult * sizeof(float));
  device_.fill_zero(zeros_.get(), zeros_.bytes());
  capacity_ = max_num_tokens;
}

void StreamBroadcast::run(const bf16* embed, bf16* residual, int64_t num_tokens) {
  HCWARM_CHECK_ARG(num_tokens >= 0, "stream broadcast: num_tokens must be >= 0, got {}", num_tokens);
  if (num_tokens == 0) return;
  reserve(num_tokens);
  // Zeroed first: 0 * (whatever the buffer held, NaN included) would not be 0.
  device_.fill_zero(residual, static_cast<size_t>(num_tokens) * dims_.k() * sizeof(bf16));
  post_.run(num_tokens, embed, residual, ones_.as<float>(), zeros_.as<float>(), residual);
}

}  // namespace hcwarm::model
