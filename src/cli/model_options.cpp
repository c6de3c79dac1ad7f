#include "cli/model_options.hpp"

#include <fmt/format.h>

namespace hcwarm::cli {

void add_model_option(CLI::App* cmd, ModelOptions& o) {
  cmd->add_option("--model", o.model, "Preset (dsv4-flash, dsv4-pro) or path to a Hugging Face config.json")
      ->capture_default_str();
}

void add_num_sms_option(CLI::App* cmd, ModelOptions& o) {
  cmd->add_option("--num-sms", o.num_sms,
                  "Multiprocessors to plan for (default: this machine's GPU; without one HCWARM_NUM_SMS, else 132 = "
                  "H200)");
}

void add_server_options(CLI::App* cmd, ModelOptions& o) {
  cmd->add_option("--chunked-prefill-size", o.chunked_prefill_size,
                  "Prefill token budget per step (default: 8192, 16384 on GPUs with >= 160 GB; <= 0 means 8192)");
  cmd->add_option("--dp-size", o.dp_size, "Data-parallel size")->capture_default_str();
  cmd->add_flag("--enable-dp-attention", o.enable_dp_attention,
                "Data-parallel attention: chunked_prefill_size is divided by --dp-size, once");
}

void add_plan_options(CLI::App* cmd, ModelOptions& o) {
  add_model_option(cmd, o);
  add_num_sms_option(cmd, o);
  add_server_options(cmd, o);
}

void add_backend_option(CLI::App* cmd, ModelOptions& o, std::string_view choices, std::string_view default_text) {
  cmd->add_option("--backend", o.backend, fmt::format("{} (default: {})", choices, default_text));
}

mhc::Backend ModelOptions::backend_or_default(const CliContext& ctx) const {
  return backend.empty() ? mhc::default_backend(ctx.env.cuda_library) : mhc::parse_backend(backend);
}

std::string ModelOptions::backend_source(const CliContext& ctx) const {
  if (!backend.empty()) return "--backend";
  return mhc::default_backend(ctx.env.cuda_library) == mhc::Backend::Cuda ? "default with a GPU"
                                                                           : "default without a GPU";
}

ModelOptions::Resolved ModelOptions::resolve(const CliContext& ctx) const {
  model::ServerArgsInput in;
  in.chunked_prefill_size = chunked_prefill_size;
  in.dp_size = dp_size;
  in.enable_dp_attention = enable_dp_attention;
  in.num_sms = num_sms;
  // Plan for the GPU of this machine, when there is one and nothing overrides it.
  std::optional<cuda::DeviceInfo> gpu;
  if (!num_sms || !chunked_prefill_size) {
    if ((gpu = cuda::query_device(0, ctx.env.cuda_library))) {
      in.device_num_sms = gpu->num_sms;
      if (gpu->total_memory_gb > 0) in.device_memory_gb = gpu->total_memory_gb;
    }
  }
  return Resolved{model::resolve_model(model), model::ServerArgs::process(in, ctx.env.num_sms), gpu};
}

}  // namespace hcwarm::cli
