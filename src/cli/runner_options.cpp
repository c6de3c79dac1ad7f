#include "cli/runner_options.hpp"

#include "cli/cache_dir.hpp"
#include "core/limits.hpp"

namespace hcwarm::cli {

void add_mlp_width_option(CLI::App* cmd, int& width) {
  cmd->add_option("--mlp-width", width,
                  "Width of the SwiGLU MLP that stands in for attention and MoE on both paths of every layer")
      ->check(CLI::Range(1, static_cast<int>(limits::kMaxMlpWidth)))
      ->capture_default_str();
}

void add_layers_option(CLI::App* cmd, int& layers, const std::string& default_text) {
  cmd->add_option("--layers", layers, "Decoder layers to build (default: " + default_text + ")");
}

void add_weight_options(CLI::App* cmd, RunnerOptions& o) {
  cmd->add_option("--seed", o.seed, "Seed of the random weights")->capture_default_str();
  cmd->add_option("--weights", o.weights,
                  "safetensors file with the layers' mHC and norm tensors (upstream names; default: random)");
}

runtime::RunnerConfig make_runner_config(const CliContext& ctx, const RunnerOptions& o) {
  runtime::RunnerConfig c;
  c.env = ctx.env;
  c.model = model::resolve_model(o.model.model);
  c.backend = o.model.backend_or_default(ctx);

  c.server_input.chunked_prefill_size = o.model.chunked_prefill_size;
  c.server_input.dp_size = o.model.dp_size;
  c.server_input.enable_dp_attention = o.model.enable_dp_attention;
  c.server_input.num_sms = o.model.num_sms;

  c.jit = jit_options(ctx, o.model.cache_dir);
  HCWARM_CHECK_ARG(o.layers >= 0 && o.layers <= limits::kMaxLayers, "--layers must be in [0, {}], got {}",
                   limits::kMaxLayers, o.layers);
  HCWARM_CHECK_ARG(o.mlp_width >= 1 && o.mlp_width <= limits::kMaxMlpWidth, "--mlp-width must be in [1, {}], got {}",
                   limits::kMaxMlpWidth, o.mlp_width);
  c.build.num_layers = o.layers;
  c.build.seed = o.seed;
  if (!o.weights.empty()) c.build.weights_file = std::filesystem::path(o.weights);
  c.mlp_width = o.mlp_width;
  return c;
}

}  // namespace hcwarm::cli
