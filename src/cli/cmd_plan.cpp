// hcwarm plan: the split buckets and representatives warmup will compile.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/model_options.hpp"
#include "mhc/hc_pre_op.hpp"
#include "mhc/split_policy.hpp"

namespace hcwarm::cli {
namespace {

struct PlanOptions {
  ModelOptions model;
  bool json = false;
};

void run_plan(const CliContext& ctx, const PlanOptions& o) {
  const auto r = o.model.resolve(ctx);
  const int64_t k = r.model.hc_hidden_size();
  const int64_t max_tokens = r.server.max_num_tokens();
  const auto buckets = mhc::split_buckets(max_tokens, k, r.server.num_sms);
  // The buckets are the GPU's; the backend only says whether they become JIT kernels.
  const mhc::Backend backend = o.model.backend_or_default(ctx);
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
    j["num_sms"] = r.server.num_sms;
    j["num_sms_source"] = r.server.num_sms_source;
    j["chunked_prefill_size"] = r.server.chunked_prefill_size;
    j["dp_size"] = r.server.dp_size;
    j["enable_dp_attention"] = r.server.enable_dp_attention;
    j["max_num_tokens"] = max_tokens;
    j["backend"] = mhc::to_string(backend);
    j["representatives"] = reps;
    j["buckets"] = nlohmann::json::array();
    for (const auto& b : buckets) {
      j["buckets"].push_back({{"num_splits", b.num_splits},
                              {"min_tokens", b.min_tokens},
                              {"max_tokens", b.max_tokens},
                              {"representative", b.representative()}});
    }
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("model {} ({}): hidden_size {}, hc_mult {}, K = hc*D = {}\n", r.model.name,
                           model::to_string(r.model.architecture), r.model.hidden_size, r.model.hc_mult, k);
  std::cout << fmt::format("num_sms {} ({}), max_num_tokens {} (chunked_prefill_size {}{})\n", r.server.num_sms,
                           r.server.num_sms_source, max_tokens, r.server.chunked_prefill_size,
                           r.server.enable_dp_attention ? fmt::format(", per rank of dp_size {}", r.server.dp_size)
                                                        : std::string());
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
  add_model_options(cmd, opts->model);
  cmd->add_flag("--json", opts->json, "Print one JSON object instead of the table");
  cmd->callback([&ctx, opts] { run_plan(ctx, *opts); });
}

}  // namespace hcwarm::cli
