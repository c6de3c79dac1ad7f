// hcwarm op hc-pre: run one mHC pre step on .npy inputs, so users can
// cross-check any backend against their own reference.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "cli/cache_dir.hpp"
#include "cli/commands.hpp"
#include "cli/model_options.hpp"
#include "cli/op_backends.hpp"
#include "core/file_io.hpp"
#include "core/npy.hpp"
#include "mhc/reference.hpp"
#include "mhc/split_policy.hpp"

namespace hcwarm::cli {
namespace fs = std::filesystem;
namespace {

struct OpOptions {
  ModelOptions model;
  std::string in_dir;
  std::string out_dir;
};

HostTensor<bf16> to_bf16(const HostTensor<float>& t) {
  HostTensor<bf16> out(t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = bf16::from_float(t[i]);
  return out;
}

HostTensor<float> to_f32(const HostTensor<bf16>& t) {
  HostTensor<float> out(t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = t[i].to_float();
  return out;
}

// Writes every file under a temporary name first and renames them only when
// all were written: a failure leaves no partial output.
void write_outputs_atomically(const fs::path& dir, const std::vector<std::pair<std::string, HostTensor<float>>>& files) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  HCWARM_CHECK_ARG(!ec && fs::is_directory(dir), "--out {}: cannot create directory: {}", dir.string(), ec.message());
  std::vector<StagedFile> staged;  // each removes its temporary unless committed
  for (const auto& [name, tensor] : files) staged.emplace_back(dir / name, encode_npy_f32(tensor));
  for (auto& f : staged) f.commit();
}

void run_hc_pre(const CliContext& ctx, const OpOptions& o) {
  const auto r = o.model.resolve(ctx);
  const fs::path in(o.in_dir);
  HCWARM_CHECK_ARG(fs::is_directory(in), "--in {}: not a directory", o.in_dir);

  const HostTensor<bf16> residual = to_bf16(read_npy_f32(in / "residual.npy"));
  const HostTensor<float> fn = read_npy_f32(in / "fn.npy");
  const HostTensor<float> scale = read_npy_f32(in / "scale.npy");
  const HostTensor<float> base = read_npy_f32(in / "base.npy");
  std::optional<HostTensor<bf16>> norm;
  if (input_present(in / "norm_weight.npy")) norm = to_bf16(read_npy_f32(in / "norm_weight.npy"));

  HCWARM_CHECK_ARG(residual.rank() == 3, "{}: residual must have shape (T, hc, D), got {}",
                   (in / "residual.npy").string(), shape_string(residual.shape()));
  HCWARM_CHECK_ARG(residual.dim(1) == r.model.hc_mult && residual.dim(2) == r.model.hidden_size,
                   "{}: residual shape {} does not match model {} (hc_mult {}, hidden_size {})",
                   (in / "residual.npy").string(), shape_string(residual.shape()), r.model.name, r.model.hc_mult,
                   r.model.hidden_size);
  mhc::check_hc_pre_shapes(residual, fn, scale, base, norm ? &*norm : nullptr);

  const std::string backend = mhc::to_string(o.model.backend_or_default(ctx));
  const int splits = mhc::num_splits(residual.dim(0), r.model.hc_hidden_size(), r.server.num_sms);
  const mhc::HcPreResult res = run_op_backend(ctx, backend, r.model, r.server, residual, fn, scale, base,
                                              norm ? &*norm : nullptr, o.model.cache_dir);

  write_outputs_atomically(o.out_dir, {{"y.npy", to_f32(res.y)}, {"post.npy", res.post}, {"comb.npy", res.comb}});
  std::cout << fmt::format("hc-pre: T={} hc={} D={} norm={} backend={} num_splits={} (num_sms {}) -> {}/{{y,post,comb}}.npy\n",
                           residual.dim(0), residual.dim(1), residual.dim(2), norm ? "fused" : "none", backend, splits,
                           r.server.num_sms, o.out_dir);
}

}  // namespace

void register_op(CLI::App& app, CliContext& ctx) {
  CLI::App* op = app.add_subcommand("op", "Run one operator on .npy inputs (cross-check against your reference)");
  op->require_subcommand(1);
  auto opts = std::make_shared<OpOptions>();
  CLI::App* cmd = op->add_subcommand("hc-pre", "The mHC pre step on .npy inputs (--in DIR), outputs to --out OUT");
  cmd->footer(
      "Reads DIR/residual.npy (T, hc, D) float32 (rounded to bf16 on load), fn.npy (hc*(2+hc), hc*D),\n"
      "scale.npy (3,), base.npy (hc*(2+hc),) and, when present, norm_weight.npy (D,) (rounded to bf16).\n"
      "Writes OUT/y.npy (T, D) float32 holding bf16 values, post.npy (T, hc) and comb.npy (T, hc, hc).\n"
      "The split count follows T and --num-sms, as in serving; tools/mhc_reference.py checks the result.");
  cmd->add_option("--in", opts->in_dir, "Input directory (DIR above)")->required();
  cmd->add_option("--out", opts->out_dir,
                  "Output directory (OUT above; created; the files appear only when all are written)")
      ->required();
  add_model_option(cmd, opts->model);
  add_num_sms_option(cmd, opts->model);
  add_backend_option(cmd, opts->model, "reference (float64 oracle) | cpu | cuda");
  add_cache_dir_option(cmd, opts->model.cache_dir);
  cmd->callback([&ctx, opts] { run_hc_pre(ctx, *opts); });
}

}  // namespace hcwarm::cli
