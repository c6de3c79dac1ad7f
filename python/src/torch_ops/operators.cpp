// hc_pre / hc_post / hc_post_pre / hc_head as PyTorch operators defined in C++
// (torch.ops.hcwarm.*), with the schemas of the package's Python definitions
// (_torch_ops.py, the fallback when this library is absent). The dispatcher calls
// these kernels directly: a call is checked (tensor_checks.hpp), its outputs and
// scratch come from PyTorch's caching allocator, and it launches on the current
// stream of the tensors' device through hcwarm._core's op context of that device.
// The Meta kernels check and shape the same way, for FakeTensor and torch.compile.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <tuple>

#include "bridge_client.hpp"
#include "tensor_checks.hpp"

namespace hcwarm::torch_ops {
namespace {

using at::Tensor;
using OptTensor = std::optional<Tensor>;
using PreOut = std::tuple<Tensor, Tensor, Tensor>;

// The operators in their registration order; bit i of g_called: operator i has run (the first-call registry).
enum Op : unsigned { kPre, kPreOut, kPost, kPostOut, kPostPre, kPostPreOut, kHead, kHeadOut, kOpCount };
constexpr const char* kOpNames = "hc_pre,hc_pre_out,hc_post,hc_post_out,hc_post_pre,hc_post_pre_out,hc_head,hc_head_out";
std::atomic<uint32_t> g_called{0};

void called(Op op) {
  if (!(g_called.load(std::memory_order_relaxed) & (1u << op))) g_called.fetch_or(1u << op);
}

template <class T>
T* data(const Tensor& x) {
  return static_cast<T*>(x.data_ptr());
}
template <class T>
T* data(const OptTensor& x) {
  return x ? static_cast<T*>(x->data_ptr()) : nullptr;
}

LaunchContext launch_on(const Tensor& residual, const std::optional<Tensor>& workspace) {
  LaunchContext l;
  if (residual.is_cuda()) l.stream = current_stream(residual.device());
  if (workspace) {
    l.workspace = workspace->data_ptr();
    l.workspace_bytes = static_cast<size_t>(workspace->numel());
  }
  return l;
}

// Scratch for a CUDA call of bytes (none on the CPU or when the kernel needs none).
std::optional<Tensor> scratch(const Tensor& residual, size_t bytes) {
  if (bytes == 0 || !residual.is_cuda()) return std::nullopt;
  return at::empty({static_cast<int64_t>(bytes)}, residual.options().dtype(at::kByte));
}

PreOut empty_pre(const Dims& d, const Tensor& like) {
  return {at::empty({d.t, d.d}, like.options().dtype(at::kBFloat16)),
          at::empty({d.t, d.hc}, like.options().dtype(at::kFloat)),
          at::empty({d.t, d.hc, d.hc}, like.options().dtype(at::kFloat))};
}

mhc::HcPreArgs pre_args(const Dims& d, const Tensor& residual, const Tensor& fn, const Tensor& scale,
                        const Tensor& base, const OptTensor& w, const Tensor& y, const Tensor& post,
                        const Tensor& comb) {
  return {.num_tokens = d.t, .residual = data<const bf16>(residual), .fn = data<const float>(fn),
          .scale = data<const float>(scale), .base = data<const float>(base), .norm_weight = data<const bf16>(w),
          .y = data<bf16>(y), .post = data<float>(post), .comb = data<float>(comb),
          .input = d.embed ? mhc::HcPreInput::Embed : mhc::HcPreInput::Residual};
}

// ---- hc_pre -----------------------------------------------------------------------------------

void run_pre(const Dims& d, const mhc::MhcConstants& c, const Tensor& residual, const Tensor& fn,
             const Tensor& scale, const Tensor& base, const OptTensor& w, const Tensor& y, const Tensor& post,
             const Tensor& comb) {
  check_contiguous({{"residual", &residual}, {"fn", &fn}, {"scale", &scale}, {"base", &base},
                    {"norm_weight", w ? &*w : nullptr}, {"out[0] (y)", &y}, {"out[1] (post)", &post},
                    {"out[2] (comb)", &comb}});
  if (d.t == 0) return;
  check_aligned({{"residual", &residual}, {"fn", &fn}, {"norm_weight", w ? &*w : nullptr}, {"out[0] (y)", &y}});
  runtime::OpContext& ctx = context(residual.device());
  const mhc::MhcDims dims{d.hc, d.d};
  python::BridgeStatus st;
  const size_t ws_bytes = residual.is_cuda() ? bridge().hc_pre_workspace(ctx, dims, c, d.t, st) : 0;
  raise_if_failed(st);
  const auto ws = scratch(residual, ws_bytes);
  bridge().hc_pre(ctx, dims, c, pre_args(d, residual, fn, scale, base, w, y, post, comb), launch_on(residual, ws), st);
  raise_if_failed(st);
}

PreOut hc_pre(const Tensor& residual, const Tensor& fn, const Tensor& scale, const Tensor& base, const OptTensor& w,
              int64_t iters, double hc_eps, double rms_eps, double norm_eps, double post_mult) {
  called(kPre);
  const mhc::MhcConstants c = constants(iters, hc_eps, rms_eps, norm_eps, post_mult);
  const Dims d = check_pre(residual, fn, scale, base, w);
  auto out = empty_pre(d, residual);
  run_pre(d, c, residual, fn, scale, base, w, std::get<0>(out), std::get<1>(out), std::get<2>(out));
  return out;
}

void hc_pre_out(const Tensor& residual, const Tensor& fn, const Tensor& scale, const Tensor& base, const OptTensor& w,
                int64_t iters, double hc_eps, double rms_eps, double norm_eps, double post_mult, const Tensor& y,
                const Tensor& post, const Tensor& comb) {
  called(kPreOut);
  const mhc::MhcConstants c = constants(iters, hc_eps, rms_eps, norm_eps, post_mult);
  const Dims d = check_pre(residual, fn, scale, base, w);
  check_pre_outputs(y, post, comb, d, residual.device());
  run_pre(d, c, residual, fn, scale, base, w, y, post, comb);
}

PreOut hc_pre_meta(const Tensor& residual, const Tensor& fn, const Tensor& scale, const Tensor& base,
                   const OptTensor& w, int64_t iters, double hc_eps, double rms_eps, double norm_eps,
                   double post_mult) {
  constants(iters, hc_eps, rms_eps, norm_eps, post_mult);
  return empty_pre(check_pre(residual, fn, scale, base, w), residual);
}

void hc_pre_out_meta(const Tensor& residual, const Tensor& fn, const Tensor& scale, const Tensor& base,
                     const OptTensor& w, int64_t iters, double hc_eps, double rms_eps, double norm_eps,
                     double post_mult, const Tensor& y, const Tensor& post, const Tensor& comb) {
  constants(iters, hc_eps, rms_eps, norm_eps, post_mult);
  check_pre_outputs(y, post, comb, check_pre(residual, fn, scale, base, w), residual.device());
}

// ---- hc_post ----------------------------------------------------------------------------------

void run_post(const Dims& d, const Tensor& x, const Tensor& residual, const Tensor& post, const Tensor& comb,
              const Tensor& out) {
  check_contiguous({{"x", &x}, {"residual", &residual}, {"post", &post}, {"comb", &comb}, {"out", &out}});
  if (d.t == 0) return;
  check_aligned({{"x", &x}, {"residual", &residual}, {"out", &out}});
  python::BridgeStatus st;
  bridge().hc_post(context(residual.device()), {d.hc, d.d}, d.t, data<const bf16>(x), data<const bf16>(residual),
                   data<const float>(post), data<const float>(comb), data<bf16>(out), launch_on(residual, std::nullopt),
                   st);
  raise_if_failed(st);
}

Tensor hc_post(const Tensor& x, const Tensor& residual, const Tensor& post, const Tensor& comb) {
  called(kPost);
  const Dims d = check_post(x, residual, post, comb);
  Tensor out = at::empty({d.t, d.hc, d.d}, residual.options());
  run_post(d, x, residual, post, comb, out);
  return out;
}

void hc_post_out(const Tensor& x, const Tensor& residual, const Tensor& post, const Tensor& comb, const Tensor& out) {
  called(kPostOut);
  const Dims d = check_post(x, residual, post, comb);
  check_tensor("out", out, at::kBFloat16, residual.device());
  expect_shape("out", out, {d.t, d.hc, d.d});
  run_post(d, x, residual, post, comb, out);
}

Tensor hc_post_meta(const Tensor& x, const Tensor& residual, const Tensor& post, const Tensor& comb) {
  const Dims d = check_post(x, residual, post, comb);
  return at::empty({d.t, d.hc, d.d}, residual.options());
}

void hc_post_out_meta(const Tensor& x, const Tensor& residual, const Tensor& post, const Tensor& comb,
                      const Tensor& out) {
  const Dims d = check_post(x, residual, post, comb);
  check_tensor("out", out, at::kBFloat16, residual.device());
  expect_shape("out", out, {d.t, d.hc, d.d});
}

// ---- hc_post_pre ------------------------------------------------------------------------------

void check_post_pre_outputs(const Dims& d, const Tensor& residual, const Tensor& nr, const Tensor& y,
                            const Tensor& post, const Tensor& comb) {
  check_tensor("new_residual", nr, at::kBFloat16, residual.device());
  expect_shape("new_residual", nr, {d.t, d.hc, d.d});
  check_pre_outputs(y, post, comb, d, residual.device());
}

void run_post_pre(const Dims& d, const mhc::MhcConstants& c, const Tensor& x, const Tensor& residual,
                  const Tensor& prev_post, const Tensor& prev_comb, const Tensor& fn, const Tensor& scale,
                  const Tensor& base, const OptTensor& w, const Tensor& nr, const Tensor& y, const Tensor& post,
                  const Tensor& comb) {
  check_contiguous({{"x", &x}, {"residual", &residual}, {"prev_post", &prev_post}, {"prev_comb", &prev_comb},
                    {"fn", &fn}, {"scale", &scale}, {"base", &base}, {"norm_weight", w ? &*w : nullptr},
                    {"new_residual", &nr}, {"out[0] (y)", &y}, {"out[1] (post)", &post}, {"out[2] (comb)", &comb}});
  if (d.t == 0) return;
  // The step reads the previous gates while it writes the new ones.
  TORCH_CHECK_VALUE(prev_post.data_ptr() != post.data_ptr(),
                    "prev_post: must not be the buffer the new gates are written to (out)");
  TORCH_CHECK_VALUE(prev_comb.data_ptr() != comb.data_ptr(),
                    "prev_comb: must not be the buffer the new gates are written to (out)");
  check_aligned({{"x", &x}, {"residual", &residual}, {"fn", &fn}, {"norm_weight", w ? &*w : nullptr},
                 {"new_residual", &nr}, {"out[0] (y)", &y}});
  runtime::OpContext& ctx = context(residual.device());
  const mhc::MhcDims dims{d.hc, d.d};
  python::BridgeStatus st;
  const size_t ws_bytes = residual.is_cuda() ? bridge().hc_pre_workspace(ctx, dims, c, d.t, st) : 0;
  raise_if_failed(st);
  const auto ws = scratch(residual, ws_bytes);
  mhc::HcPreArgs a = pre_args(d, residual, fn, scale, base, w, y, post, comb);
  a.input = mhc::HcPreInput::Post;
  a.x = data<const bf16>(x);
  a.prev_post = data<const float>(prev_post);
  a.prev_comb = data<const float>(prev_comb);
  a.new_residual = data<bf16>(nr);
  bridge().hc_post_pre(ctx, dims, c, a, launch_on(residual, ws), st);
  raise_if_failed(st);
}

std::tuple<Tensor, Tensor, Tensor, Tensor> hc_post_pre(const Tensor& x, const Tensor& residual,
                                                       const Tensor& prev_post, const Tensor& prev_comb,
                                                       const Tensor& fn, const Tensor& scale, const Tensor& base,
                                                       const OptTensor& w, int64_t iters, double hc_eps,
                                                       double rms_eps, double norm_eps, double post_mult) {
  called(kPostPre);
  const mhc::MhcConstants c = constants(iters, hc_eps, rms_eps, norm_eps, post_mult);
  const Dims d = check_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, w);
  Tensor nr = at::empty({d.t, d.hc, d.d}, residual.options());
  auto [y, post, comb] = empty_pre(d, residual);
  run_post_pre(d, c, x, residual, prev_post, prev_comb, fn, scale, base, w, nr, y, post, comb);
  return {nr, y, post, comb};
}

void hc_post_pre_out(const Tensor& x, const Tensor& residual, const Tensor& prev_post, const Tensor& prev_comb,
                     const Tensor& fn, const Tensor& scale, const Tensor& base, const OptTensor& w, int64_t iters,
                     double hc_eps, double rms_eps, double norm_eps, double post_mult, const Tensor& nr,
                     const Tensor& y, const Tensor& post, const Tensor& comb) {
  called(kPostPreOut);
  const mhc::MhcConstants c = constants(iters, hc_eps, rms_eps, norm_eps, post_mult);
  const Dims d = check_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, w);
  check_post_pre_outputs(d, residual, nr, y, post, comb);
  run_post_pre(d, c, x, residual, prev_post, prev_comb, fn, scale, base, w, nr, y, post, comb);
}

std::tuple<Tensor, Tensor, Tensor, Tensor> hc_post_pre_meta(const Tensor& x, const Tensor& residual,
                                                            const Tensor& prev_post, const Tensor& prev_comb,
                                                            const Tensor& fn, const Tensor& scale,
                                                            const Tensor& base, const OptTensor& w, int64_t iters,
                                                            double hc_eps, double rms_eps, double norm_eps,
                                                            double post_mult) {
  constants(iters, hc_eps, rms_eps, norm_eps, post_mult);
  const Dims d = check_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, w);
  auto [y, post, comb] = empty_pre(d, residual);
  return {at::empty({d.t, d.hc, d.d}, residual.options()), y, post, comb};
}

void hc_post_pre_out_meta(const Tensor& x, const Tensor& residual, const Tensor& prev_post, const Tensor& prev_comb,
                          const Tensor& fn, const Tensor& scale, const Tensor& base, const OptTensor& w,
                          int64_t iters, double hc_eps, double rms_eps, double norm_eps, double post_mult,
                          const Tensor& nr, const Tensor& y, const Tensor& post, const Tensor& comb) {
  constants(iters, hc_eps, rms_eps, norm_eps, post_mult);
  const Dims d = check_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, w);
  check_post_pre_outputs(d, residual, nr, y, post, comb);
  TORCH_CHECK_VALUE(!prev_post.is_same(post), "prev_post: must not be the buffer the new gates are written to (out)");
  TORCH_CHECK_VALUE(!prev_comb.is_same(comb), "prev_comb: must not be the buffer the new gates are written to (out)");
}

// ---- hc_head ----------------------------------------------------------------------------------

void run_head(const Dims& d, float hc_eps, float rms_eps, const Tensor& residual, const Tensor& head_fn,
              const Tensor& head_scale, const Tensor& head_base, const Tensor& out) {
  check_contiguous({{"residual", &residual}, {"head_fn", &head_fn}, {"head_scale", &head_scale},
                    {"head_base", &head_base}, {"out", &out}});
  if (d.t == 0) return;
  check_aligned({{"residual", &residual}, {"head_fn", &head_fn}, {"out", &out}});
  runtime::OpContext& ctx = context(residual.device());
  const mhc::MhcDims dims{d.hc, d.d};
  python::BridgeStatus st;
  const size_t ws_bytes = residual.is_cuda() ? bridge().hc_head_workspace(ctx, dims, hc_eps, rms_eps, d.t, st) : 0;
  raise_if_failed(st);
  const auto ws = scratch(residual, ws_bytes);
  const mhc::HcHeadArgs a{d.t, data<const bf16>(residual), data<const float>(head_fn), data<const float>(head_scale),
                          data<const float>(head_base), data<bf16>(out)};
  bridge().hc_head(ctx, dims, hc_eps, rms_eps, a, launch_on(residual, ws), st);
  raise_if_failed(st);
}

Tensor hc_head(const Tensor& residual, const Tensor& head_fn, const Tensor& head_scale, const Tensor& head_base,
               double hc_eps, double rms_eps) {
  called(kHead);
  const float he = eps("hc_eps", hc_eps), re = eps("rms_eps", rms_eps);
  const Dims d = check_head(residual, head_fn, head_scale, head_base);
  Tensor out = at::empty({d.t, d.d}, residual.options());
  run_head(d, he, re, residual, head_fn, head_scale, head_base, out);
  return out;
}

void hc_head_out(const Tensor& residual, const Tensor& head_fn, const Tensor& head_scale, const Tensor& head_base,
                 double hc_eps, double rms_eps, const Tensor& out) {
  called(kHeadOut);
  const float he = eps("hc_eps", hc_eps), re = eps("rms_eps", rms_eps);
  const Dims d = check_head(residual, head_fn, head_scale, head_base);
  check_tensor("out", out, at::kBFloat16, residual.device());
  expect_shape("out", out, {d.t, d.d});
  run_head(d, he, re, residual, head_fn, head_scale, head_base, out);
}

Tensor hc_head_meta(const Tensor& residual, const Tensor& head_fn, const Tensor& head_scale, const Tensor& head_base,
                    double hc_eps, double rms_eps) {
  eps("hc_eps", hc_eps);
  eps("rms_eps", rms_eps);
  const Dims d = check_head(residual, head_fn, head_scale, head_base);
  return at::empty({d.t, d.d}, residual.options());
}

void hc_head_out_meta(const Tensor& residual, const Tensor& head_fn, const Tensor& head_scale,
                      const Tensor& head_base, double hc_eps, double rms_eps, const Tensor& out) {
  eps("hc_eps", hc_eps);
  eps("rms_eps", rms_eps);
  const Dims d = check_head(residual, head_fn, head_scale, head_base);
  check_tensor("out", out, at::kBFloat16, residual.device());
  expect_shape("out", out, {d.t, d.d});
}

}  // namespace
}  // namespace hcwarm::torch_ops

#define HCWARM_CONSTANTS "int sinkhorn_iters, float hc_eps, float rms_eps, float norm_eps, float post_mult"
#define HCWARM_PRE_INPUTS "Tensor residual, Tensor fn, Tensor scale, Tensor base, Tensor? norm_weight"
#define HCWARM_POST_PRE_INPUTS                                                                                  \
  "Tensor x, Tensor residual, Tensor prev_post, Tensor prev_comb, Tensor fn, Tensor scale, Tensor base, Tensor? " \
  "norm_weight"
#define HCWARM_HEAD_INPUTS \
  "Tensor residual, Tensor head_fn, Tensor head_scale, Tensor head_base, float hc_eps, float rms_eps"

TORCH_LIBRARY(hcwarm, m) {
  m.def("hc_pre(" HCWARM_PRE_INPUTS ", " HCWARM_CONSTANTS ") -> (Tensor, Tensor, Tensor)");
  m.def("hc_pre_out(" HCWARM_PRE_INPUTS ", " HCWARM_CONSTANTS
        ", Tensor(a!) y, Tensor(b!) post, Tensor(c!) comb) -> ()");
  m.def("hc_post(Tensor x, Tensor residual, Tensor post, Tensor comb) -> Tensor");
  m.def("hc_post_out(Tensor x, Tensor residual, Tensor post, Tensor comb, Tensor(a!) out) -> ()");
  m.def("hc_post_pre(" HCWARM_POST_PRE_INPUTS ", " HCWARM_CONSTANTS ") -> (Tensor, Tensor, Tensor, Tensor)");
  m.def("hc_post_pre_out(" HCWARM_POST_PRE_INPUTS ", " HCWARM_CONSTANTS
        ", Tensor(a!) new_residual, Tensor(b!) y, Tensor(c!) post, Tensor(d!) comb) -> ()");
  m.def("hc_head(" HCWARM_HEAD_INPUTS ") -> Tensor");
  m.def("hc_head_out(" HCWARM_HEAD_INPUTS ", Tensor(a!) out) -> ()");
}

namespace {
void register_kernels(torch::Library& m) {
  using namespace hcwarm::torch_ops;
  m.impl("hc_pre", &hc_pre);
  m.impl("hc_pre_out", &hc_pre_out);
  m.impl("hc_post", &hc_post);
  m.impl("hc_post_out", &hc_post_out);
  m.impl("hc_post_pre", &hc_post_pre);
  m.impl("hc_post_pre_out", &hc_post_pre_out);
  m.impl("hc_head", &hc_head);
  m.impl("hc_head_out", &hc_head_out);
}
}  // namespace

TORCH_LIBRARY_IMPL(hcwarm, CPU, m) { register_kernels(m); }
TORCH_LIBRARY_IMPL(hcwarm, CUDA, m) { register_kernels(m); }
TORCH_LIBRARY_IMPL(hcwarm, Meta, m) {
  using namespace hcwarm::torch_ops;
  m.impl("hc_pre", &hc_pre_meta);
  m.impl("hc_pre_out", &hc_pre_out_meta);
  m.impl("hc_post", &hc_post_meta);
  m.impl("hc_post_out", &hc_post_out_meta);
  m.impl("hc_post_pre", &hc_post_pre_meta);
  m.impl("hc_post_pre_out", &hc_post_pre_out_meta);
  m.impl("hc_head", &hc_head_meta);
  m.impl("hc_head_out", &hc_head_out_meta);
}

// The first-call registry's view: the operators' names (comma-separated, in bit
// order) and the bits of those called at least once in this process.
extern "C" __attribute__((visibility("default"))) const char* hcwarm_torch_ops_names() {
  return hcwarm::torch_ops::kOpNames;
}
extern "C" __attribute__((visibility("default"))) uint32_t hcwarm_torch_ops_called() {
  return hcwarm::torch_ops::g_called.load();
}
