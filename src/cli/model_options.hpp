#pragma once
// The model and server options, declared once and added by each command that
// uses them: --model, --num-sms, the server's token budget (--chunked-prefill-size,
// --dp-size, --enable-dp-attention) and --backend.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "backends/cuda/cuda_driver.hpp"
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
  std::string backend;    // "" = the command's default
  std::string cache_dir;  // "" = HCWARM_CACHE_DIR / ~/.cache/hcwarm (cli/cache_dir.hpp)

  // What --model and the server options resolve to.
  struct Resolved {
    model::ModelConfig model;
    model::ServerArgs server;
    std::optional<cuda::DeviceInfo> gpu;  // this machine's GPU, when its SMs or memory were used
  };
  Resolved resolve(const CliContext& ctx) const;
  // --backend, or the fastest this machine has (cuda with a GPU, else cpu); a bad name is an error.
  mhc::Backend backend_or_default(const CliContext& ctx) const;
  // Why that backend: "--backend", "default with a GPU" or "default without a GPU".
  std::string backend_source(const CliContext& ctx) const;
};

void add_model_option(CLI::App* cmd, ModelOptions& o);    // --model
void add_num_sms_option(CLI::App* cmd, ModelOptions& o);  // --num-sms
// --chunked-prefill-size, --dp-size, --enable-dp-attention: what decides the largest forward.
void add_server_options(CLI::App* cmd, ModelOptions& o);
// --model, --num-sms and the server options: what a plan of the split buckets needs.
void add_plan_options(CLI::App* cmd, ModelOptions& o);
// --backend; default_text says what an absent one means for this command.
void add_backend_option(CLI::App* cmd, ModelOptions& o, std::string_view choices = "reference | cpu | cuda",
                        std::string_view default_text = "cuda when a GPU is present, else cpu");

}  // namespace hcwarm::cli
