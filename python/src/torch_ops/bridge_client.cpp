#include "bridge_client.hpp"

#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <array>
#include <atomic>
#include <cstring>

namespace hcwarm::torch_ops {
namespace {

std::atomic<const python::TorchBridge*> g_bridge{nullptr};

// Slot 0: the CPU; 1 + N: cuda:N.
constexpr int kMaxCudaDevices = 64;
std::array<std::atomic<runtime::OpContext*>, 1 + kMaxCudaDevices> g_contexts{};

}  // namespace

const python::TorchBridge& bridge() {
  const python::TorchBridge* b = g_bridge.load(std::memory_order_acquire);
  TORCH_CHECK(b != nullptr,
              "hcwarm's PyTorch operator library is not bound to hcwarm._core; import hcwarm before calling "
              "torch.ops.hcwarm.*");
  return *b;
}

runtime::OpContext& context(const c10::Device& device) {
  const bool cuda = device.is_cuda();
  const int index = cuda ? device.index() : 0;
  TORCH_CHECK_VALUE(!cuda || (index >= 0 && index < kMaxCudaDevices), "residual: CUDA device index ", index,
                    " is outside hcwarm's 0..", kMaxCudaDevices - 1);
  std::atomic<runtime::OpContext*>& slot = g_contexts[cuda ? 1 + index : 0];
  if (runtime::OpContext* ctx = slot.load(std::memory_order_acquire)) return *ctx;
  python::BridgeStatus status;
  runtime::OpContext* ctx = bridge().context(cuda, index, status);
  raise_if_failed(status);
  TORCH_CHECK(ctx != nullptr, "hcwarm: no op context for ", device.str());
  slot.store(ctx, std::memory_order_release);  // the package keeps contexts for the process
  return *ctx;
}

void raise_if_failed(const python::BridgeStatus& status) {
  if (status.ok) return;
  TORCH_CHECK_VALUE(std::strcmp(status.type, "InvalidArgumentError") != 0, status.message);
  TORCH_CHECK(false, status.type, ": ", status.message);
}

void* current_stream(const c10::Device& device) {
  return c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(device).native_handle();
}

}  // namespace hcwarm::torch_ops

// Called once by the package at import (through ctypes) with _core's table; returns 0,
// or 1 when the table was made by another build (abi or version differ).
extern "C" __attribute__((visibility("default"))) int hcwarm_torch_ops_bind(const void* table) {
  const auto* b = static_cast<const hcwarm::python::TorchBridge*>(table);
  if (b == nullptr || b->abi != hcwarm::python::kTorchBridgeAbi || b->version == nullptr ||
      std::strcmp(b->version, HCWARM_VERSION) != 0) {
    return 1;
  }
  hcwarm::torch_ops::g_bridge.store(b, std::memory_order_release);
  return 0;
}
