#pragma once
// hc_post on the CPU, in the library (no JIT): tokens over a ThreadPool.
#include <memory>

#include "backends/hc_post_backend.hpp"
#include "core/thread_pool.hpp"

namespace hcwarm::cpu {

class CpuHcPostBackend final : public backends::HcPostBackend {
 public:
  explicit CpuHcPostBackend(std::shared_ptr<ThreadPool> pool) : pool_(std::move(pool)) {}  // null: this thread
  bool needs_module() const override { return false; }
  void bind(std::shared_ptr<const jit::LoadedModule>) override {}
  void launch(const backends::HcPostParams& p, const LaunchContext& launch, bool generic) override;

 private:
  std::shared_ptr<ThreadPool> pool_;
};

}  // namespace hcwarm::cpu
