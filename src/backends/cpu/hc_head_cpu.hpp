#pragma once
// The mHC head on the CPU, in the library (no JIT: one compile-free kernel for
// every width, kernels/cpu/mhc_head.hpp), tokens spread over a ThreadPool.
#include <memory>

#include "backends/hc_head_backend.hpp"
#include "core/thread_pool.hpp"

namespace hcwarm::cpu {

class CpuHcHeadBackend final : public backends::HcHeadBackend {
 public:
  explicit CpuHcHeadBackend(std::shared_ptr<ThreadPool> pool) : pool_(std::move(pool)) {}  // null: this thread
  bool needs_module() const override { return false; }
  void bind(std::shared_ptr<const jit::LoadedModule>) override {}
  void launch(const hcwarm_mhc_head_params& p, const LaunchContext& launch) override;

 private:
  std::shared_ptr<ThreadPool> pool_;
};

}  // namespace hcwarm::cpu
