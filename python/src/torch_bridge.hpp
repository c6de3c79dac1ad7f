#pragma once
// The table hcwarm._core hands to the PyTorch operator library (python/src/torch_ops):
// the per-device op contexts and the calls the operators make on them, so that
// both libraries drive one runtime per device. Both are built from one tree in one
// build (the table's abi and version must match); every function catches what it
// throws and reports it in a BridgeStatus instead, so that no exception crosses
// between the two libraries.
#include <cstddef>
#include <cstdint>

#include "core/launch_context.hpp"
#include "mhc/mhc_types.hpp"

namespace hcwarm::runtime {
class OpContext;
}

namespace hcwarm::python {

inline constexpr uint32_t kTorchBridgeAbi = 1;

// What a failed bridge call reports: the name of the hcwarm exception type its
// ErrorKind raises in Python ("InvalidArgumentError", "NotWarmedError", ...) and the
// message (cut to fit). Plain characters: the two libraries may be built against
// different C++ string ABIs (PyTorch's).
struct BridgeStatus {
  bool ok = true;
  char type[32] = {};
  char message[8192] = {};
};

struct TorchBridge {
  uint32_t abi = kTorchBridgeAbi;
  const char* version = nullptr;  // HCWARM_VERSION of the _core that made the table
  // The shared context of a device (the CPU: cuda false, index 0), created through
  // the Python package's registry on first use so that its settings apply (takes the GIL).
  runtime::OpContext* (*context)(bool cuda, int index, BridgeStatus& status) = nullptr;
  size_t (*hc_pre_workspace)(runtime::OpContext& ctx, mhc::MhcDims dims, const mhc::MhcConstants& constants,
                             int64_t num_tokens, BridgeStatus& status) = nullptr;
  void (*hc_pre)(runtime::OpContext& ctx, mhc::MhcDims dims, const mhc::MhcConstants& constants,
                 const mhc::HcPreArgs& args, const LaunchContext& launch, BridgeStatus& status) = nullptr;
  void (*hc_post)(runtime::OpContext& ctx, mhc::MhcDims dims, int64_t num_tokens, const bf16* x,
                  const bf16* residual, const float* post, const float* comb, bf16* out, const LaunchContext& launch,
                  BridgeStatus& status) = nullptr;
  // args.input is Post: x, prev_post, prev_comb and new_residual are set.
  void (*hc_post_pre)(runtime::OpContext& ctx, mhc::MhcDims dims, const mhc::MhcConstants& constants,
                      const mhc::HcPreArgs& args, const LaunchContext& launch, BridgeStatus& status) = nullptr;
  size_t (*hc_head_workspace)(runtime::OpContext& ctx, mhc::MhcDims dims, float hc_eps, float rms_eps,
                              int64_t num_tokens, BridgeStatus& status) = nullptr;
  void (*hc_head)(runtime::OpContext& ctx, mhc::MhcDims dims, float hc_eps, float rms_eps,
                  const mhc::HcHeadArgs& args, const LaunchContext& launch, BridgeStatus& status) = nullptr;
};

// _core's table (torch_bridge.cpp); Python passes its address to the operator library.
const TorchBridge& torch_bridge();

}  // namespace hcwarm::python
