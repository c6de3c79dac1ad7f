#pragma once
// hc_pre on the CPU: host-JIT modules (one per split bucket) or the generic
// kernels compiled into the library, run over a ThreadPool.
#include <memory>

#include "backends/hc_pre_backend.hpp"
#include "core/thread_pool.hpp"

namespace hcwarm::cpu {

class CpuHcPreBackend final : public backends::HcPreBackend {
 public:
  // pool: the threads the kernels run on (shared with the caller, or the op's own).
  CpuHcPreBackend(int hc_mult, std::shared_ptr<ThreadPool> pool);

  std::unique_ptr<backends::HcPreKernels> bind(std::shared_ptr<const jit::LoadedModule> module,
                                               const jit::KernelSpec& spec, int num_splits) override;
  std::unique_ptr<backends::HcPreKernels> bind_generic(bool fused_norm) override;
  bool has_generic() const override { return hc_mult_ == 4; }
  size_t workspace_bytes(int64_t num_tokens, int num_splits) const override;
  void launch(const backends::HcPreKernels& kernels, hcwarm_mhc_pre_params p, const LaunchContext& launch,
              int stages) override;

  void set_pool(std::shared_ptr<ThreadPool> pool) { pool_ = std::move(pool); }

 private:
  int hc_mult_;
  std::shared_ptr<ThreadPool> pool_;
};

}  // namespace hcwarm::cpu
