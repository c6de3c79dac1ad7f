// hcwarm plan: the split buckets and representatives warmup will compile, and
// in words which GPU (SM count) and which backend's kernels the plan is for.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "cli/model_options.hpp"
#include "mhc/hc_pre_op.hpp"
#include "mhc/split_policy.hpp"

namespace hcwarm::cli {
namespace {

struct PlanOptions {
  ModelOptions model;
  bool json = false;
};

// "NVIDIA H200 (132 SMs), this machine's GPU 0" / "148 SMs (--num-sms)" / ...
std::string gpu_words(const ModelOptions::Resolved& r) {
  const int sms = r.server.num_sms;
  if (r.server.num_sms_source == "device") return fmt::format("{} ({} SMs), this machine's GPU 0", r.gpu->name, sms);
  if (r.server.num_sms_source == "--num-sms") return fmt::format("{} SMs (--num-sms)", sms);
  if (r.server.num_sms_source == "HCWARM_NUM_SMS") return fmt::format("{} SMs (HCWARM_NUM_SMS); no GPU found", sms);
  return fmt::format("no GPU found; planning for {} SMs (H200 default; --num-sms or HCWARM_NUM_SMS to change)", sms);
}

// "cpu backend (the default without a GPU; --backend cuda for the GPU kernels' keys)"
std::string backend_words(mhc::Backend backend, const std::string& source) {
  if (source == "--backend") return fmt::format("{} backend (--backend)", mhc::to_string(backend));
  if (backend == mhc::Backend::Cuda) return "cuda backend (the default with a GPU; --backend cpu for the CPU's keys)";
  return fmt::format("{} backend (the {}; --backend cuda for the GPU kernels' keys)", mhc::to_string(backend), source);
}

void run_plan(const CliContext& ctx, const PlanOptions& o) {
  const auto r = o.model.resolve(ctx);
  const int64_t k = r.model.hc_hidden_size();
  const int64_t max_tokens = r.server.max_num_tokens();
  const auto buckets = mhc::split_buckets(max_tokens, k, r.server.num_sms);
  // The buckets are the GPU's; the backend only says whether they become JIT kernels.
  const mhc::Backend backend = o.model.backend_or_default(ctx);
  const std::string backend_source = o.model.backend_source(ctx);
  const bool jit_kernels = mhc::HcPreOp::uses_fast_path(backend, mhc::Variant::Specialized);
  std::vector<int64_t> reps;
  for (const auto& b : buckets) reps.push_back(b.representative());

  if (o.json) {
    nlohmann::json j;
    j["model"] = r.model.name;
    j["architecture"] = model::to_string(r.model.architecture);
    j["hidden_size"] = r.model.hidden_size;
    j["hc_mult"] = r.model.hc_mult;
    j["hc_hidden_size"] = k;
    j["gpu"] = r.gpu ? nlohmann::json{{"name", r.gpu->name},
                                      {"num_sms", r.gpu->num_sms},
                                      {"memory_gb", r.gpu->total_memory_gb}}
                     : nlohmann::json();
    j["num_sms"] = r.server.num_sms;
    j["num_sms_source"] = r.server.num_sms_source;
    j["chunked_prefill_size"] = r.server.chunked_prefill_size;
    j["dp_size"] = r.server.dp_size;
    j["enable_dp_attention"] = r.server.enable_dp_attention;
    j["max_num_tokens"] = max_tokens;
    j["backend"] = mhc::to_string(backend);
    j["backend_source"] = backend_source;
    j["representatives"] = reps;
    j["buckets"] = nlohmann::json::array();
    for (const auto& b : buckets) {
      j["buckets"].push_back({{"num_splits", b.num_splits},
                              {"min_tokens", b.min_tokens},
                              {"max_tokens", b.max_tokens},
                              {"representative", b.representative()}});
    }
    print_json(std::cout, j);
    return;
  }
  std::cout << fmt::format("model {} ({}): hidden_size {}, hc_mult {}, K = hc*D = {}\n", r.model.name,
                           model::to_string(r.model.architecture), r.model.hidden_size, r.model.hc_mult, k);
  std::cout << fmt::format("GPU: {}\n", gpu_words(r));
  std::cout << fmt::format("max_num_tokens {} (chunked_prefill_size {}{})\n", max_tokens, r.server.chunked_prefill_size,
                           r.server.enable_dp_attention ? fmt::format(", per rank of dp_size {}", r.server.dp_size)
                                                        : std::string());
  std::cout << fmt::format("keys for the {}\n", backend_words(backend, backend_source));
  std::cout << fmt::format("{} split buckets{}:\n\n", buckets.size(),
                           jit_kernels ? fmt::format(", one {} kernel specialization each", mhc::to_string(backend))
                                       : std::string(" (the reference backend compiles no kernels)"));
  std::cout << fmt::format("  {:>3}  {:>10}  {:>17}  {:>14}\n", "#", "num_splits", "token range", "representative");
  int i = 0;
  for (const auto& b : buckets) {
    std::cout << fmt::format("  {:>3}  {:>10}  {:>17}  {:>14}\n", ++i, b.num_splits,
                             fmt::format("{}..{}", b.min_tokens, b.max_tokens), b.representative());
  }
  std::cout << fmt::format("\nrepresentatives: {}\n", fmt::join(reps, ", "));
}

}  // namespace

void register_plan(CLI::App& app, CliContext& ctx) {
  auto opts = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand(
      "plan", "Show the mHC pre split buckets for a model and GPU, and the token count warmup runs for each");
  cmd->footer(
      "Needs no GPU: it plans for this machine's GPU when there is one, else for --num-sms, HCWARM_NUM_SMS\n"
      "or an H200's 132 SMs, and says which. The buckets are the GPU's; --backend says whose kernels the keys are.");
  add_plan_options(cmd, opts->model);
  add_backend_option(cmd, opts->model, "reference | cpu | cuda: whose kernels the keys are");
  add_json_flag(cmd, opts->json);
  cmd->callback([&ctx, opts] { run_plan(ctx, *opts); });
}

}  // namespace hcwarm::cli
