#pragma once
// The options every command that plans or runs a model accepts, declared once.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "cli/commands.hpp"
#include "mhc/hc_pre_op.hpp"
#include "model/model_config.hpp"
#include "model/server_args.hpp"

namespace hcwarm::cli {

struct ModelOptions {
  std::string model = "dsv4-flash";
  std::optional<int> num_sms;
  std::optional<int64_t> chunked_prefill_size;
  int dp_size = 1;
  bool enable_dp_attention = false;
  std::string backend;    // "" = the fastest this machine has
  std::string cache_dir;  // "" = HCWARM_CACHE_DIR / ~/.cache/hcwarm

  // What --model and the server options resolve to.
  struct Resolved {
    model::ModelConfig model;
    model::ServerArgs server;
  };
  Resolved resolve(const CliContext& ctx) const;
  // --backend, or the fastest this machine has (cuda with a GPU, else cpu); a bad name is an error.
  mhc::Backend backend_or_default(const CliContext& ctx) const;
};

// Every command that plans or runs a model takes all of them, so one command
// line can move between plan, warm, replay, cache build and bench.
void add_model_options(CLI::App* cmd, ModelOptions& opts);

}  // namespace hcwarm::cli
