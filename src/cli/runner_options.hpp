#pragma once
// The options of the commands that build and run the model (warm, replay, demo,
// and as a child's arguments bench serve), and the runner configuration they
// make: the backend (default: CUDA when a GPU is present), the GPU's SM count
// and memory for the server arguments, and the JIT options (cache dir, jobs).
#include <optional>

#include "cli/model_options.hpp"
#include "runtime/model_runner.hpp"

namespace hcwarm::cli {

// The stand-in SwiGLU MLP's width, one default for every command (and so for the
// kernel cache keys: a `cache build` and a `warm` of one configuration agree).
// Small, so that CPU runs stay short; raise it to give forwards a heavier cost.
inline constexpr int kDefaultMlpWidth = 8;

struct RunnerOptions {
  ModelOptions model;
  int layers = 0;        // 0: the model's own count
  int mlp_width = kDefaultMlpWidth;
  uint64_t seed = 0;
  std::string weights;   // safetensors file with the mHC/norm tensors ("" = random)
};

// --mlp-width, checked against core/limits.hpp.
void add_mlp_width_option(CLI::App* cmd, int& width);
// --layers; default_text says what 0 (the default) builds.
void add_layers_option(CLI::App* cmd, int& layers, const std::string& default_text = "the model's num_hidden_layers");
// --seed and --weights: the values of the layers' weights.
void add_weight_options(CLI::App* cmd, RunnerOptions& o);

runtime::RunnerConfig make_runner_config(const CliContext& ctx, const RunnerOptions& opts);

}  // namespace hcwarm::cli
