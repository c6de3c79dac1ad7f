// hcwarm op hc-pre | hc-post-pre | hc-head: run one mHC step on .npy inputs,
// so users can cross-check any backend against their own reference.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <iostream>

#include "cli/cache_dir.hpp"
#include "cli/commands.hpp"
#include "cli/model_options.hpp"
#include "cli/op_backends.hpp"
#include "core/file_io.hpp"
#include "core/npy.hpp"
#include "core/output_set.hpp"
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

// All the files or none of them, even when a rename fails midway (core/output_set.hpp).
void write_outputs_atomically(const fs::path& dir, const std::vector<std::pair<std::string, HostTensor<float>>>& files) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  HCWARM_CHECK_ARG(!ec && fs::is_directory(dir), "--out {}: cannot create directory: {}", dir.string(), ec.message());
  OutputSet out(dir);
  for (const auto& [name, tensor] : files) out.add(name, encode_npy_f32(tensor));
  out.publish();
}

// The input files of one call, each checked as it is read; messages name the file.
class OpInputs {
 public:
  explicit OpInputs(const std::string& dir) : dir_(dir) {
    std::error_code ec;  // a name too long, say: not a directory either
    HCWARM_CHECK_ARG(fs::is_directory(dir_, ec), "--in {}: not a directory{}", dir, ec ? ": " + ec.message() : "");
  }
  fs::path path(const char* name) const { return dir_ / name; }
  HostTensor<float> f32(const char* name) const { return read_npy_f32(path(name)); }
  // bf16 tensors travel as float32 holding bf16 values (rounded to bf16 on load).
  HostTensor<bf16> bf16s(const char* name) const { return to_bf16(f32(name)); }
  std::optional<HostTensor<bf16>> norm_weight() const {
    if (!input_present(path("norm_weight.npy"))) return std::nullopt;
    return bf16s("norm_weight.npy");
  }
  // The (T, hc, D) residual streams of the model's width.
  HostTensor<bf16> residual(const model::ModelConfig& m) const {
    HostTensor<bf16> r = bf16s("residual.npy");
    HCWARM_CHECK_ARG(r.rank() == 3, "{}: residual must have shape (T, hc, D), got {}", path("residual.npy").string(),
                     shape_string(r.shape()));
    check_model(r.shape(), m);
    return r;
  }
  void check_model(const Shape& shape, const model::ModelConfig& m) const {
    const bool streams = shape.size() == 3;
    HCWARM_CHECK_ARG((!streams || shape[1] == m.hc_mult) && shape.back() == m.hidden_size,
                     "{}: residual shape {} does not match model {} (hc_mult {}, hidden_size {})",
                     path("residual.npy").string(), shape_string(shape), m.name, m.hc_mult, m.hidden_size);
  }
  // `name`'s shape must be `want`, derived from residual.npy's `from`.
  void expect_shape(const char* name, const Shape& got, const Shape& want, const Shape& from) const {
    HCWARM_CHECK_ARG(got == want, "{}: shape {} does not match {} expected from residual.npy {}",
                     path(name).string(), shape_string(got), shape_string(want), shape_string(from));
  }

 private:
  fs::path dir_;
};

std::string backend_name(const CliContext& ctx, const OpOptions& o) {
  return mhc::to_string(o.model.backend_or_default(ctx));
}

void run_hc_pre(const CliContext& ctx, const OpOptions& o) {
  const auto r = o.model.resolve(ctx);
  const OpInputs in(o.in_dir);
  // (T, hc, D) streams, or (T, D): the first layer's embedding standing for hc copies.
  const HostTensor<bf16> residual = in.bf16s("residual.npy");
  const HostTensor<float> fn = in.f32("fn.npy");
  const HostTensor<float> scale = in.f32("scale.npy");
  const HostTensor<float> base = in.f32("base.npy");
  const std::optional<HostTensor<bf16>> norm = in.norm_weight();

  const bool embed = residual.rank() == 2;
  HCWARM_CHECK_ARG(embed || residual.rank() == 3,
                   "{}: residual must have shape (T, hc, D), or (T, D) for the first layer's embedding, got {}",
                   in.path("residual.npy").string(), shape_string(residual.shape()));
  in.check_model(residual.shape(), r.model);
  if (embed) {
    mhc::check_hc_pre_embed_shapes(residual, r.model.hc_mult, fn, scale, base, norm ? &*norm : nullptr);
  } else {
    mhc::check_hc_pre_shapes(residual, fn, scale, base, norm ? &*norm : nullptr);
  }

  const std::string backend = backend_name(ctx, o);
  const int splits = mhc::num_splits(residual.dim(0), r.model.hc_hidden_size(), r.server.num_sms);
  const mhc::HcPreResult res = run_op_backend(ctx, backend, r.model, r.server, residual, fn, scale, base,
                                              norm ? &*norm : nullptr, o.model.cache_dir);

  write_outputs_atomically(o.out_dir, {{"y.npy", to_f32(res.y)}, {"post.npy", res.post}, {"comb.npy", res.comb}});
  std::cout << fmt::format(
      "hc-pre: T={} hc={} D={} input={} norm={} backend={} num_splits={} (num_sms {}) -> {}/{{y,post,comb}}.npy\n",
      residual.dim(0), r.model.hc_mult, r.model.hidden_size, embed ? "embed" : "residual", norm ? "fused" : "none",
      backend, splits, r.server.num_sms, o.out_dir);
}

void run_hc_post_pre(const CliContext& ctx, const OpOptions& o) {
  const auto r = o.model.resolve(ctx);
  const OpInputs in(o.in_dir);
  const HostTensor<bf16> residual = in.residual(r.model);
  const int64_t T = residual.dim(0), hc = residual.dim(1), D = residual.dim(2);
  const HostTensor<bf16> x = in.bf16s("x.npy");
  in.expect_shape("x.npy", x.shape(), {T, D}, residual.shape());
  const HostTensor<float> prev_post = in.f32("prev_post.npy");
  in.expect_shape("prev_post.npy", prev_post.shape(), {T, hc}, residual.shape());
  const HostTensor<float> prev_comb = in.f32("prev_comb.npy");
  in.expect_shape("prev_comb.npy", prev_comb.shape(), {T, hc, hc}, residual.shape());
  const HostTensor<float> fn = in.f32("fn.npy");
  const HostTensor<float> scale = in.f32("scale.npy");
  const HostTensor<float> base = in.f32("base.npy");
  const std::optional<HostTensor<bf16>> norm = in.norm_weight();
  mhc::check_hc_post_pre_shapes(x, residual, prev_post, prev_comb, fn, scale, base, norm ? &*norm : nullptr);

  const std::string backend = backend_name(ctx, o);
  const int splits = mhc::num_splits(T, r.model.hc_hidden_size(), r.server.num_sms);
  const mhc::HcPostPreResult res = run_post_pre_backend(ctx, backend, r.model, r.server, x, residual, prev_post,
                                                        prev_comb, fn, scale, base, norm ? &*norm : nullptr,
                                                        o.model.cache_dir);

  write_outputs_atomically(o.out_dir, {{"new_residual.npy", to_f32(res.new_residual)},
                                       {"y.npy", to_f32(res.pre.y)},
                                       {"post.npy", res.pre.post},
                                       {"comb.npy", res.pre.comb}});
  std::cout << fmt::format(
      "hc-post-pre: T={} hc={} D={} norm={} backend={} num_splits={} (num_sms {}) -> "
      "{}/{{new_residual,y,post,comb}}.npy\n",
      T, hc, D, norm ? "fused" : "none", backend, splits, r.server.num_sms, o.out_dir);
}

void run_hc_head(const CliContext& ctx, const OpOptions& o) {
  const auto r = o.model.resolve(ctx);
  const OpInputs in(o.in_dir);
  const HostTensor<bf16> residual = in.residual(r.model);
  const HostTensor<float> fn = in.f32("head_fn.npy");
  const HostTensor<float> scale = in.f32("head_scale.npy");
  const HostTensor<float> base = in.f32("head_base.npy");
  const int64_t hc = residual.dim(1), K = hc * residual.dim(2);
  in.expect_shape("head_fn.npy", fn.shape(), {hc, K}, residual.shape());
  in.expect_shape("head_scale.npy", scale.shape(), {1}, residual.shape());
  in.expect_shape("head_base.npy", base.shape(), {hc}, residual.shape());
  mhc::check_hc_head_shapes(residual, fn, scale, base);

  const std::string backend = backend_name(ctx, o);
  const HostTensor<bf16> y = run_head_backend(ctx, backend, r.model, residual, fn, scale, base, o.model.cache_dir);
  write_outputs_atomically(o.out_dir, {{"y.npy", to_f32(y)}});
  std::cout << fmt::format("hc-head: T={} hc={} D={} backend={} -> {}/y.npy\n", residual.dim(0), hc,
                           residual.dim(2), backend, o.out_dir);
}

}  // namespace

namespace {

// --in, --out and the model options every op command takes.
CLI::App* add_op_command(CLI::App* op, CliContext& ctx, const char* name, const char* summary, const char* footer,
                         void (*run)(const CliContext&, const OpOptions&), bool uses_num_sms) {
  auto opts = std::make_shared<OpOptions>();
  CLI::App* cmd = op->add_subcommand(name, summary);
  cmd->footer(footer);
  cmd->add_option("--in", opts->in_dir, "Input directory (DIR above)")->required();
  cmd->add_option("--out", opts->out_dir,
                  "Output directory (OUT above; created; the files appear only when all are written)")
      ->required();
  add_model_option(cmd, opts->model);
  if (uses_num_sms) add_num_sms_option(cmd, opts->model);
  add_backend_option(cmd, opts->model, "reference (float64 oracle) | cpu | cuda");
  add_cache_dir_option(cmd, opts->model.cache_dir);
  cmd->callback([&ctx, opts, run] { run(ctx, *opts); });
  return cmd;
}

}  // namespace

void register_op(CLI::App& app, CliContext& ctx) {
  CLI::App* op = app.add_subcommand("op", "Run one operator on .npy inputs (cross-check against your reference)");
  op->require_subcommand(1);
  add_op_command(
      op, ctx, "hc-pre", "The mHC pre step on .npy inputs (--in DIR), outputs to --out OUT",
      "Reads DIR/residual.npy (T, hc, D) float32 (rounded to bf16 on load), or (T, D): the first layer's\n"
      "token embedding standing for hc identical streams; fn.npy (hc*(2+hc), hc*D), scale.npy (3,),\n"
      "base.npy (hc*(2+hc),) and, when present, norm_weight.npy (D,) (rounded to bf16).\n"
      "Writes OUT/y.npy (T, D) float32 holding bf16 values, post.npy (T, hc) and comb.npy (T, hc, hc).\n"
      "The split count follows T and --num-sms, as in serving; tools/mhc_reference.py checks the result.",
      run_hc_pre, /*uses_num_sms=*/true);
  add_op_command(
      op, ctx, "hc-post-pre",
      "The fused sublayer boundary (hc_post of one sublayer, then hc_pre of the next) on .npy inputs",
      "Reads DIR/x.npy (T, D): the previous sublayer's output; residual.npy (T, hc, D): the streams that\n"
      "entered it; prev_post.npy (T, hc) and prev_comb.npy (T, hc, hc): its pre step's post and comb;\n"
      "then the next sublayer's fn.npy, scale.npy, base.npy and, when present, norm_weight.npy, as hc-pre.\n"
      "bf16 tensors (x, residual, norm_weight) are float32 files rounded to bf16 on load.\n"
      "Writes OUT/new_residual.npy (T, hc, D) (bf16 values, as stored between the sublayers), y.npy (T, D),\n"
      "post.npy (T, hc) and comb.npy (T, hc, hc): hc-pre applied to new_residual.",
      run_hc_post_pre, /*uses_num_sms=*/true);
  add_op_command(
      op, ctx, "hc-head", "The mHC head (after the last layer: hc streams to one) on .npy inputs",
      "Reads DIR/residual.npy (T, hc, D) float32 (rounded to bf16 on load), head_fn.npy (hc, hc*D),\n"
      "head_scale.npy (1,) and head_base.npy (hc,): hc_head_fn, hc_head_scale, hc_head_base.\n"
      "Writes OUT/y.npy (T, D) float32 holding bf16 values (before the model's final norm).\n"
      "One kernel serves every T (no split buckets).",
      run_hc_head, /*uses_num_sms=*/false);
}

}  // namespace hcwarm::cli
