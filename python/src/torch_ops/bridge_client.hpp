#pragma once
// The operator library's end of the bridge to hcwarm._core (../torch_bridge.hpp):
// the bound table, each device's op context (asked for once, then kept), and the
// errors _core reports raised as PyTorch errors.
#include <c10/core/Device.h>

#include "../torch_bridge.hpp"

namespace hcwarm::torch_ops {

const python::TorchBridge& bridge();
runtime::OpContext& context(const c10::Device& device);
// Raises a failed status: InvalidArgumentError as ValueError, any other kind as
// RuntimeError("<hcwarm type>: <message>"), which hcwarm.* re-raises as that type.
void raise_if_failed(const python::BridgeStatus& status);
// The current stream of a CUDA device as a CUstream (the caller's, as PyTorch keeps it).
void* current_stream(const c10::Device& device);

}  // namespace hcwarm::torch_ops
