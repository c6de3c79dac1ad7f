#pragma once
// The mHC head on a CUDA device: the "mhc_head" JIT module (one per hc and
// hidden, kernels/cuda/mhc_head.cuh) launched on the caller's stream: the
// cluster kernel's narrow instantiation while its grid is at most one block per
// SM (decode), the wide one beyond, and from head_one_pass_min_tokens on the
// one-pass kernel of hc_pre computing the head's gates (one persistent
// cooperative launch that reads the residual from memory once), where the
// shape allows it. Clusters need compute capability 9.0 or newer: on older GPUs,
// and wherever the portable forms are forced, the cluster-free kernel runs at every T.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/mhc_pre_cuda.hpp"
#include "backends/hc_head_backend.hpp"

namespace hcwarm::cuda {

// The kernels of one (hc, hidden) module (jit/kernel_entry.hpp): the cluster
// kernel hcwarm_head::mhc_head_cluster_kernel with 1 token per thread (decode)
// and with head_wide_tokens_per_thread (part 0), and where head_has_one_pass,
// hc_pre's one-pass kernel in its head form (part 1). portable: the
// cluster-free hcwarm_head::mhc_head_portable_kernel, narrow and wide, alone.
struct HeadEntries {
  jit::KernelEntry narrow, wide;
  std::optional<jit::KernelEntry> one_pass;
};
HeadEntries mhc_head_entries(int hc, int hidden, bool portable);

// Why the CUDA head cannot take this shape, or nullptr.
const char* head_shape_unsupported(int hc, int hidden);
// Tokens per thread of the wide kernel (hcwarm_mhc::head_wide_tpt).
int head_wide_tokens_per_thread(int hc, int hidden);
// Whether the head module holds the one-pass kernel: hc_pre's one-pass shapes
// (one_pass_supported on sm_90).
bool head_has_one_pass(int hc, int hidden);
// The token count from which the head runs the one-pass kernel by default,
// where the H200's cluster kernel falls behind it (docs/BENCHMARKS.md, "The rest of the family").
// The same at both DeepSeek V4 widths; the argument keeps the door open for others.
int64_t head_one_pass_min_tokens(int hidden);
// The translation unit of one (hc, hidden) specialization: mhc_head_entries'
// kernels, the one-pass kernel as a second part where the shape has it.
jit::KernelSource mhc_head_cuda_source(int hc, int hidden, bool portable);

class CudaHcHeadBackend final : public backends::HcHeadBackend {
 public:
  CudaHcHeadBackend(CudaDevice& device, int hc, int hidden)
      : device_(device),
        hc_(hc),
        hidden_(hidden),
        portable_(device.portable()),
        one_pass_min_tokens_(head_one_pass_min_tokens(hidden)) {}
  // T from which the one-pass kernel runs where the shape and the GPU allow it
  // (INT64_MAX: never; 1: always, for tests and benchmarks).
  void set_one_pass_min_tokens(int64_t num_tokens) { one_pass_min_tokens_ = num_tokens; }
  bool needs_module() const override { return true; }
  void bind(std::shared_ptr<const jit::LoadedModule> module) override;
  bool capturing(const LaunchContext& launch) const override;
  size_t workspace_bytes(int64_t num_tokens) const override;
  const char* unsupported_argument(const hcwarm_mhc_head_params& p) const override;
  void launch(const hcwarm_mhc_head_params& p, const LaunchContext& launch) override;

 private:
  CUstream stream_of(const LaunchContext& launch) const;
  // Whether a call on T tokens may take the one-pass kernel (before binding: whether it could).
  bool one_pass_wanted(int64_t num_tokens) const;
  // Whether this device and shape can run it at all (never in the portable forms).
  bool one_pass_possible() const;

  CudaDevice& device_;
  int hc_;
  int hidden_;
  bool portable_;  // the device's portable forms: the cluster-free kernel, no one-pass kernel
  int64_t one_pass_min_tokens_;
  std::shared_ptr<const jit::LoadedModule> module_;
  CUfunction narrow_ = nullptr;
  CUfunction wide_ = nullptr;
  OnePassKernel one_pass_;  // none: too few SMs, or a driver without TMA
};

}  // namespace hcwarm::cuda
