#pragma once
// Turns the shared model/server options into a model runner's configuration:
// the backend (default: CUDA when a GPU is present), the GPU's SM count and
// memory for the server arguments, and the JIT options (cache dir, jobs).
#include <optional>

#include "cli/model_options.hpp"
#include "runtime/model_runner.hpp"

namespace hcwarm::cli {

struct RunnerOptions {
  ModelOptions model;
  int layers = 0;        // 0: the model's own count
  int mlp_width = 256;
  uint64_t seed = 0;
  std::string weights;   // safetensors file with the mHC/norm tensors ("" = random)
};

// Adds --layers, --mlp-width, --seed, --weights next to the model options.
void add_runner_options(CLI::App* cmd, RunnerOptions& opts);

runtime::RunnerConfig make_runner_config(const CliContext& ctx, const RunnerOptions& opts);

}  // namespace hcwarm::cli
