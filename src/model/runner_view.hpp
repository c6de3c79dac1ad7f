#pragma once
// What a model's warmup hook may ask of the model runner that calls it. The
// runner implements it; the model knows nothing else about the runner.
#include <cstdint>
#include <vector>

#include "core/device.hpp"
#include "core/env_config.hpp"
#include "model/server_args.hpp"

namespace hcwarm::model {

class RunnerView {
 public:
  virtual ~RunnerView() = default;
  virtual const ServerArgs& server_args() const = 0;
  virtual const EnvConfig& env() const = 0;
  virtual Device& device() = 0;
};

// A model that implements this gets its kernel_warmup() called by the runner
// after the framework-level warmups (the runner holds no model-specific code).
class KernelWarmupHook {
 public:
  virtual ~KernelWarmupHook() = default;
  // Returns the token counts it prewarmed (empty when it skipped), for reports.
  virtual std::vector<int64_t> kernel_warmup(RunnerView& runner) = 0;
};

}  // namespace hcwarm::model
