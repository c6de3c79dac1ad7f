#pragma once
// hcwarm._core's Context: one device's runtime::OpContext as the Python package
// sees it. It converts only: raw device addresses into the op arguments, Python
// values into the library's request structs, reports into dicts. Every call that
// can take time releases the GIL. The Python layer checks tensors before they get here.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_driver.hpp"
#include "core/env_config.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/logging.hpp"
#include "mhc/hc_head_op.hpp"
#include "mhc/hc_post_pre.hpp"
#include "mhc/hc_pre_op.hpp"
#include "mhc/split_policy.hpp"
#include "model/model_config.hpp"
#include "model/server_args.hpp"
#include "runtime/coverage_check.hpp"
#include "runtime/op_context.hpp"

namespace hcwarm::python {

namespace nb = nanobind;
using namespace nb::literals;

template <class T>
inline T* ptr(uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

// None: the device's own stream; an int: that CUstream, 0 being CUDA's legacy default stream.
inline std::optional<void*> launch_stream(std::optional<uintptr_t> stream) {
  if (!stream) return std::nullopt;
  return ptr<void>(*stream);
}

inline mhc::MhcConstants constants(int sinkhorn_iters, float hc_eps, float rms_eps, float norm_eps, float post_mult) {
  HCWARM_CHECK_ARG(sinkhorn_iters >= 1 && sinkhorn_iters <= limits::kMaxSinkhornIters,
                   "sinkhorn_iters must be in [1, {}], got {}", limits::kMaxSinkhornIters, sinkhorn_iters);
  mhc::MhcConstants c;
  c.sinkhorn_iters = sinkhorn_iters;
  c.hc_eps = hc_eps;
  c.rms_eps = rms_eps;
  c.norm_eps = norm_eps;
  c.post_mult = post_mult;
  return c;
}

// hc_pre's input kinds as the Python layer passes them.
inline constexpr int kInputResidual = 0;
inline constexpr int kInputEmbed = 1;

inline mhc::HcPreInput pre_input(int input) {
  HCWARM_CHECK_ARG(input == kInputResidual || input == kInputEmbed,
                   "hc_pre input must be {} (residual streams) or {} (embedding), got {}", kInputResidual, kInputEmbed,
                   input);
  return input == kInputEmbed ? mhc::HcPreInput::Embed : mhc::HcPreInput::Residual;
}

inline mhc::MhcDims dims(int hc, int hidden) {
  HCWARM_CHECK_ARG(hc >= 1 && hc <= limits::kMaxHcMult && hidden >= 1 && hidden <= limits::kMaxHiddenSize,
                   "bad mHC shape hc={} hidden={} (limits: hc <= {}, hidden <= {})", hc, hidden, limits::kMaxHcMult,
                   limits::kMaxHiddenSize);
  return {hc, hidden};
}

// A model config from a preset name, a config.json path, or JSON text (a dict on the Python side).
inline model::ModelConfig resolve_config(const std::string& preset_or_path, const std::optional<std::string>& json_text) {
  if (json_text) return model::parse_model_config(*json_text, "config dict");
  return model::resolve_model(preset_or_path);
}

inline nb::dict config_dict(const model::ModelConfig& c) {
  nb::dict d;
  d["name"] = c.name;
  d["architecture"] = model::to_string(c.architecture);
  d["hidden_size"] = c.hidden_size;
  d["hc_mult"] = c.hc_mult;
  d["hc_sinkhorn_iters"] = c.hc_sinkhorn_iters;
  d["hc_eps"] = c.hc_eps;
  d["rms_norm_eps"] = c.rms_norm_eps;
  d["num_hidden_layers"] = c.num_hidden_layers;
  d["num_nextn_predict_layers"] = c.num_nextn_predict_layers;
  d["sliding_window"] = c.sliding_window ? nb::cast(*c.sliding_window) : nb::none();
  d["defaults"] = c.defaulted_fields;
  return d;
}

// The split buckets as (num_splits, min_tokens, max_tokens), by num_splits ascending.
inline nb::list bucket_list(int64_t max_num_tokens, int64_t hc_hidden_size, int num_sms) {
  nb::list out;
  for (const mhc::SplitBucket& b : mhc::split_buckets(max_num_tokens, hc_hidden_size, num_sms)) {
    out.append(nb::make_tuple(b.num_splits, b.min_tokens, b.max_tokens));
  }
  return out;
}

// The SM count a context created without num_sms plans with: on a CUDA device
// (cuda_ordinal set) the device's, else HCWARM_NUM_SMS, else 132 (OpContextOptions::num_sms).
inline int default_num_sms(std::optional<int> cuda_ordinal) {
  const EnvConfig env = EnvConfig::from_environment();
  model::ServerArgsInput in;
  if (cuda_ordinal) {
    if (const auto info = cuda::query_device(*cuda_ordinal, env.cuda_library)) in.device_num_sms = info->num_sms;
  }
  return model::ServerArgs::process(in, env.num_sms).num_sms;
}

class Context {
 public:
  Context(const std::string& backend, int device, std::optional<int> num_sms, std::optional<std::string> cache_dir,
          const std::string& variant, std::optional<bool> strict_warmup, std::optional<bool> jit, int jobs,
          bool progress) {
    runtime::OpContextOptions o;
    o.env = EnvConfig::from_environment();
    o.backend = backend == "auto" ? mhc::default_backend(o.env.cuda_library) : mhc::parse_backend(backend);
    o.device_ordinal = device;
    o.num_sms = num_sms;
    o.variant = mhc::parse_variant(variant);
    if (jit) o.env.jit_compile = *jit;
    o.jit = jit::JitOptions::from_env(o.env);
    if (cache_dir) {
      o.jit.cache_dir = cache_dir->empty() ? std::nullopt : std::optional<std::filesystem::path>(*cache_dir);
    }
    if (strict_warmup) o.jit.strict_warmup = *strict_warmup;
    if (jobs > 0) o.jit.jobs = jobs;
    // The library only reports progress; here it becomes one log line per key.
    if (progress) {
      o.jit.progress = [](const jit::BuildProgressEvent& e) {
        if (e.done > 0) log::info("{}", jit::format_progress_line(e));
      };
    }
    ctx_ = std::make_unique<runtime::OpContext>(std::move(o));
  }

  // The pre step's arguments every input kind has.
  static mhc::HcPreArgs pre_args(int64_t num_tokens, uintptr_t residual, uintptr_t fn, uintptr_t scale,
                                 uintptr_t base, uintptr_t norm_weight, uintptr_t y, uintptr_t post, uintptr_t comb) {
    return {.num_tokens = num_tokens, .residual = ptr<const bf16>(residual), .fn = ptr<const float>(fn),
            .scale = ptr<const float>(scale), .base = ptr<const float>(base),
            .norm_weight = ptr<const bf16>(norm_weight), .y = ptr<bf16>(y), .post = ptr<float>(post),
            .comb = ptr<float>(comb)};
  }

  // input: kInputResidual (residual (T, hc, D)) or kInputEmbed (the first layer's embedding (T, D)).
  void hc_pre(int64_t num_tokens, int hc, int hidden, uintptr_t residual, uintptr_t fn, uintptr_t scale,
              uintptr_t base, uintptr_t norm_weight, uintptr_t y, uintptr_t post, uintptr_t comb,
              std::optional<uintptr_t> stream,
              uintptr_t workspace, size_t workspace_bytes, int sinkhorn_iters, float hc_eps, float rms_eps,
              float norm_eps, float post_mult, int input) {
    mhc::HcPreOp& op = ctx_->hc_pre(dims(hc, hidden), constants(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult));
    mhc::HcPreArgs a = pre_args(num_tokens, residual, fn, scale, base, norm_weight, y, post, comb);
    a.input = pre_input(input);
    op.run(a, {launch_stream(stream), ptr<void>(workspace), workspace_bytes});
  }

  size_t hc_pre_workspace_bytes(int64_t num_tokens, int hc, int hidden, int sinkhorn_iters, float hc_eps,
                                float rms_eps, float norm_eps, float post_mult) {
    return ctx_->hc_pre(dims(hc, hidden), constants(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult))
        .workspace_bytes(num_tokens);
  }

  bool hc_pre_loaded(int64_t num_tokens, int hc, int hidden, bool fused_norm, int sinkhorn_iters, float hc_eps,
                     float rms_eps, float norm_eps, float post_mult, int input) {
    return ctx_->hc_pre(dims(hc, hidden), constants(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult))
        .loaded(num_tokens, fused_norm, pre_input(input));
  }

  // The sublayer boundary: new_residual = post step(x, residual, prev_post,
  // prev_comb) (may be residual itself), then hc_pre on it into y, post, comb.
  void hc_post_pre(int64_t num_tokens, int hc, int hidden, uintptr_t x, uintptr_t residual, uintptr_t prev_post,
                   uintptr_t prev_comb, uintptr_t fn, uintptr_t scale, uintptr_t base, uintptr_t norm_weight,
                   uintptr_t new_residual, uintptr_t y, uintptr_t post, uintptr_t comb,
                   std::optional<uintptr_t> stream, uintptr_t workspace, size_t workspace_bytes, int sinkhorn_iters,
                   float hc_eps, float rms_eps, float norm_eps, float post_mult) {
    const mhc::MhcDims d = dims(hc, hidden);
    mhc::HcPreOp& pre = ctx_->hc_pre(d, constants(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult));
    mhc::HcPreArgs a = pre_args(num_tokens, residual, fn, scale, base, norm_weight, y, post, comb);
    a.input = mhc::HcPreInput::Post;
    a.x = ptr<const bf16>(x);
    a.prev_post = ptr<const float>(prev_post);
    a.prev_comb = ptr<const float>(prev_comb);
    a.new_residual = ptr<bf16>(new_residual);
    mhc::run_hc_post_pre(pre, ctx_->hc_post(d), a, {launch_stream(stream), ptr<void>(workspace), workspace_bytes});
  }

  void hc_head(int64_t num_tokens, int hc, int hidden, uintptr_t residual, uintptr_t fn, uintptr_t scale,
               uintptr_t base, uintptr_t y, std::optional<uintptr_t> stream, uintptr_t workspace,
               size_t workspace_bytes, float hc_eps, float rms_eps) {
    ctx_->hc_head(dims(hc, hidden), hc_eps, rms_eps)
        .run({num_tokens, ptr<const bf16>(residual), ptr<const float>(fn), ptr<const float>(scale),
              ptr<const float>(base), ptr<bf16>(y)},
             {launch_stream(stream), ptr<void>(workspace), workspace_bytes});
  }

  size_t hc_head_workspace_bytes(int64_t num_tokens, int hc, int hidden, float hc_eps, float rms_eps) {
    return ctx_->hc_head(dims(hc, hidden), hc_eps, rms_eps).workspace_bytes(num_tokens);
  }

  // The coverage check (runtime/coverage_check.hpp) of the ops the last
  // prewarm on this device warmed, over its [1, max_num_tokens].
  nb::dict check_coverage(bool fused_norm) {
    HCWARM_CHECK_ARG(last_prewarm_.has_value(), "check_coverage: no prewarm ran on this device; call prewarm() first");
    const LastPrewarm& p = *last_prewarm_;
    runtime::CoverageReport r;
    {
      nb::gil_scoped_release release;
      r = runtime::check_kernel_coverage({ctx_->hc_pre(p.dims, p.constants), ctx_->hc_post(p.dims),
                                          ctx_->hc_head(p.dims, p.constants.hc_eps, p.constants.rms_eps)},
                                         ctx_->device(), &ctx_->jit(), p.max_num_tokens, fused_norm);
    }
    nb::dict d;
    d["calls"] = r.calls;
    d["token_counts"] = r.token_counts;
    d["missing"] = r.missing;
    d["max_num_tokens"] = p.max_num_tokens;
    return d;
  }

  void hc_post(int64_t num_tokens, int hc, int hidden, uintptr_t x, uintptr_t residual, uintptr_t post,
               uintptr_t comb, uintptr_t out, std::optional<uintptr_t> stream) {
    ctx_->hc_post(dims(hc, hidden))
        .run(num_tokens, ptr<const bf16>(x), ptr<const bf16>(residual), ptr<const float>(post),
             ptr<const float>(comb), ptr<bf16>(out), {launch_stream(stream), nullptr, 0});
  }

  static runtime::PrewarmRequest request(const std::string& model, const std::optional<std::string>& config_json,
                                         std::optional<int64_t> chunked_prefill_size, int dp_size,
                                         bool enable_dp_attention, bool fused_norm, bool unfused_norm) {
    runtime::PrewarmRequest req;
    req.model = resolve_config(model, config_json);
    req.server.chunked_prefill_size = chunked_prefill_size;
    req.server.dp_size = dp_size;
    req.server.enable_dp_attention = enable_dp_attention;
    req.fused_norm = fused_norm;
    req.unfused_norm = unfused_norm;
    return req;
  }

  // The distinct keys prewarm() builds for this request, in its order.
  std::vector<std::string> planned_keys(const std::string& model, std::optional<std::string> config_json,
                                        std::optional<int64_t> chunked_prefill_size, int dp_size,
                                        bool enable_dp_attention, bool fused_norm, bool unfused_norm) {
    const auto req = request(model, config_json, chunked_prefill_size, dp_size, enable_dp_attention, fused_norm,
                             unfused_norm);
    nb::gil_scoped_release release;
    return ctx_->planned_keys(req).first;
  }

  // What prewarm() would plan for this request on this context, computed without
  // building anything: the server arguments it plans with, the split buckets and
  // their representatives, the keys (planned_keys) and the config's defaults.
  nb::dict plan(const std::string& model, std::optional<std::string> config_json,
                std::optional<int64_t> chunked_prefill_size, int dp_size, bool enable_dp_attention, bool fused_norm,
                bool unfused_norm) {
    const auto req = request(model, config_json, chunked_prefill_size, dp_size, enable_dp_attention, fused_norm,
                             unfused_norm);
    model::ServerArgs server;
    std::vector<std::string> keys;
    {
      nb::gil_scoped_release release;
      server = ctx_->prewarm_server(req);
      keys = ctx_->planned_keys(req).first;
    }
    const int64_t k = req.model.hc_hidden_size();
    nb::dict d;
    d["model"] = req.model.name;
    d["hidden_size"] = req.model.hidden_size;
    d["hc_mult"] = req.model.hc_mult;
    d["max_num_tokens"] = server.max_num_tokens();
    d["num_sms"] = server.num_sms;
    d["buckets"] = bucket_list(server.max_num_tokens(), k, server.num_sms);
    d["representatives"] = mhc::representatives(server.max_num_tokens(), k, server.num_sms);
    d["keys"] = keys;
    d["defaults"] = req.model.defaulted_fields;
    d["skipped"] = ctx_->prewarm_skipped();
    return d;
  }

  // The group's kernel exchange before prewarm (runtime::OpContext::prewarm_exchange).
  // gather(bytes) -> list of bytes, one per rank: the Python transport (hcwarm._group),
  // called with the GIL held; the builds and the publishing run without it.
  nb::dict prewarm_exchange(const std::string& model, std::optional<std::string> config_json,
                            std::optional<int64_t> chunked_prefill_size, int dp_size, bool enable_dp_attention,
                            bool fused_norm, bool unfused_norm, int rank, int world, nb::callable gather) {
    const auto req = request(model, config_json, chunked_prefill_size, dp_size, enable_dp_attention, fused_norm,
                             unfused_norm);
    const jit::GatherBytes gather_bytes = [&gather](const std::string& mine) {
      nb::gil_scoped_acquire gil;
      nb::object got = gather(nb::bytes(mine.data(), mine.size()));
      std::vector<std::string> all;
      for (nb::handle h : got) {
        HCWARM_CHECK_ARG(nb::isinstance<nb::bytes>(h), "group gather: expected a list of bytes");
        const nb::bytes b = nb::borrow<nb::bytes>(h);
        all.emplace_back(b.c_str(), b.size());
      }
      return all;
    };
    jit::ExchangeReport r;
    {
      nb::gil_scoped_release release;
      r = ctx_->prewarm_exchange(req, rank, world, gather_bytes);
    }
    nb::dict d;
    d["rank"] = r.rank;
    d["world_size"] = r.world;
    d["planned_keys"] = r.planned_keys;
    d["shard_keys"] = r.shard_keys;
    d["shard_compiled"] = r.compiled;
    d["shard_present"] = r.shard_present;
    d["received"] = r.received;
    d["received_present"] = r.already_present;
    d["shared"] = r.shared;
    d["refused"] = r.refused;
    d["bytes_sent"] = r.bytes_sent;
    d["bytes_received"] = r.bytes_received;
    d["shard_seconds"] = r.build_seconds;
    d["exchange_seconds"] = r.exchange_seconds;
    return d;
  }

  // How many JIT events are recorded so far; compiled_keys_since(n) lists the keys compiled after the n-th.
  size_t event_count() const { return ctx_->jit().events().size(); }
  std::vector<std::string> compiled_keys_since(size_t mark) const {
    const auto events = ctx_->jit().events();
    std::vector<std::string> keys;
    for (size_t i = mark; i < events.size(); ++i) {
      if (events[i].source == jit::ArtifactSource::Compiled) keys.push_back(events[i].key);
    }
    return keys;
  }

  nb::dict prewarm(const std::string& model, std::optional<std::string> config_json,
                   std::optional<int64_t> chunked_prefill_size, int dp_size, bool enable_dp_attention,
                   bool fused_norm, bool unfused_norm) {
    const auto req = request(model, config_json, chunked_prefill_size, dp_size, enable_dp_attention, fused_norm,
                             unfused_norm);
    runtime::PrewarmReport r;
    {
      nb::gil_scoped_release release;
      r = ctx_->prewarm(req);
      const mhc::MhcConstants c = req.model.mhc_constants();
      last_prewarm_ = LastPrewarm{req.model.mhc_dims(), c, r.max_num_tokens};
    }
    nb::dict d;
    d["keys"] = r.keys;
    d["compiled"] = r.compiled;
    d["loaded_from_disk"] = r.loaded_from_disk;
    d["memory_hits"] = r.memory_hits;
    d["seconds"] = r.seconds;
    d["token_counts"] = r.token_counts;
    d["max_num_tokens"] = r.max_num_tokens;
    d["num_sms"] = r.num_sms;
    d["skipped"] = r.skipped;
    d["defaults"] = r.defaults;
    d["peak_bytes"] = r.peak_bytes;
    return d;
  }

  nb::dict stats() const {
    const jit::CompileStats s = ctx_->jit().stats();
    nb::dict d;
    d["compiled"] = s.compiled;
    d["loaded_from_disk"] = s.loaded_from_disk;
    d["memory_hits"] = s.memory_hits;
    d["compiles_after_ready"] = s.compiles_after_ready;
    d["background_compiles_after_ready"] = s.background_compiles_after_ready;
    d["compile_seconds"] = s.compile_seconds;
    d["failed"] = s.failed;
    d["waited_for_compile"] = s.waited_for_compile;
    d["compile_wait_s"] = s.compile_wait_s;
    d["served_by_generic"] = s.served_by_generic;
    d["background_compiled"] = s.background_compiled;
    d["background_failed"] = s.background_failed;
    return d;
  }

  runtime::OpContext& op_context() { return *ctx_; }
  int64_t compiles_after_ready() const { return ctx_->compiles_after_ready(); }
  int64_t background_compiles_after_ready() const { return ctx_->background_compiles_after_ready(); }
  bool ready() const { return ctx_->jit().ready(); }
  void mark_ready() { ctx_->jit().mark_ready(); }
  std::string backend() const { return mhc::to_string(ctx_->backend()); }
  int device() const { return ctx_->device_ordinal(); }
  int num_sms() const { return ctx_->num_sms(); }
  std::string arch() const { return ctx_->arch(); }
  std::string device_name() const { return ctx_->device().name(); }
  std::optional<std::string> cache_dir() const {
    const auto* disk = ctx_->jit().disk_cache();
    if (disk == nullptr) return std::nullopt;
    return ctx_->jit().options().cache_dir->string();
  }

 private:
  struct LastPrewarm {
    mhc::MhcDims dims;
    mhc::MhcConstants constants;
    int64_t max_num_tokens = 0;
  };

  std::unique_ptr<runtime::OpContext> ctx_;
  std::optional<LastPrewarm> last_prewarm_;
};

}  // namespace hcwarm::python
