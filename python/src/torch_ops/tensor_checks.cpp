#include "tensor_checks.hpp"

#include <c10/util/Exception.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

namespace hcwarm::torch_ops {
namespace {

// Tokens in one call (limits::kMaxTokens; _checks.MAX_TOKENS).
constexpr int64_t kMaxTokens = int64_t{1} << 20;
constexpr int64_t kMaxSinkhornIters = 1000;

// A shape or stride list as Python prints a tuple: (3,), (2, 4, 7168), ().
std::string py_tuple(c10::IntArrayRef v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

// A float as Python's repr prints it: the shortest round trip, ".0" after an integral value.
std::string py_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string py_dtype(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16: return "torch.bfloat16";
    case at::kFloat: return "torch.float32";
    case at::kHalf: return "torch.float16";
    case at::kDouble: return "torch.float64";
    case at::kLong: return "torch.int64";
    case at::kInt: return "torch.int32";
    case at::kShort: return "torch.int16";
    case at::kChar: return "torch.int8";
    case at::kByte: return "torch.uint8";
    case at::kBool: return "torch.bool";
    default: return std::string("torch.") + c10::toString(t);
  }
}

[[noreturn]] void value_error(const std::string& message) { TORCH_CHECK_VALUE(false, message); }

int64_t tokens(int64_t t) {
  if (t > kMaxTokens) {
    value_error("residual: " + std::to_string(t) + " tokens exceed hcwarm's bound of " + std::to_string(kMaxTokens) +
                " per call");
  }
  return t;
}

Dims pre_dims(const at::Tensor& residual) {
  const auto s = residual.sizes();
  if (s.size() != 3) value_error("residual: expected (T, hc, D), got shape " + py_tuple(s));
  if (s[1] < 1 || s[2] < 1) value_error("residual: hc and D must be positive, got shape " + py_tuple(s));
  return {tokens(s[0]), static_cast<int>(s[1]), static_cast<int>(s[2]), false};
}

Dims embed_dims(const at::Tensor& residual, const at::Tensor& fn) {
  const int64_t t = residual.size(0), d = residual.size(1);
  if (d < 1) value_error("residual: D must be positive, got shape " + py_tuple(residual.sizes()));
  const auto f = fn.sizes();
  const int64_t hc = f.size() == 2 ? f[1] / d : 0;
  if (f.size() != 2 || hc < 1 || f[1] != hc * d || f[0] != hc * (2 + hc)) {
    value_error("residual: a 2-D residual is the first layer's embedding (T, D) = " + py_tuple(residual.sizes()) +
                ", which needs fn of shape (hc*(2+hc), hc*" + std::to_string(d) + ") for some hc, got fn " +
                py_tuple(f) + "; streams are (T, hc, D)");
  }
  return {tokens(t), static_cast<int>(hc), static_cast<int>(d), true};
}

bool is_embed(const at::Tensor& residual) {
  const auto n = residual.dim();
  if (n != 2 && n != 3) {
    value_error("residual: expected (T, hc, D) streams or a (T, D) embedding, got shape " +
                py_tuple(residual.sizes()));
  }
  return n == 2;
}

Dims pre_shapes(const at::Tensor& residual, const at::Tensor& fn, const at::Tensor& scale, const at::Tensor& base,
                const std::optional<at::Tensor>& norm_weight) {
  const Dims d = is_embed(residual) ? embed_dims(residual, fn) : pre_dims(residual);
  const int64_t mix = int64_t{d.hc} * (2 + d.hc);
  expect_shape("fn", fn, {mix, int64_t{d.hc} * d.d});
  expect_shape("scale", scale, {3});
  expect_shape("base", base, {mix});
  if (norm_weight) expect_shape("norm_weight", *norm_weight, {d.d});
  return d;
}

bool broadcast(const at::Tensor& x) {
  for (int64_t i = 0; i < x.dim(); ++i) {
    if (x.size(i) > 1 && x.stride(i) == 0) return true;
  }
  return false;
}

}  // namespace

void check_tensor(const char* name, const at::Tensor& x, at::ScalarType dtype, const c10::Device& device) {
  TORCH_CHECK_TYPE(x.scalar_type() == dtype, name, ": expected dtype ", py_dtype(dtype), ", got ",
                   py_dtype(x.scalar_type()));
  TORCH_CHECK_VALUE(x.device() == device, name, ": expected a tensor on ", device.str(), " (where residual is), got one on ",
                    x.device().str());
}

void check_tensor(const char* name, const std::optional<at::Tensor>& x, at::ScalarType dtype,
                  const c10::Device& device) {
  if (x) check_tensor(name, *x, dtype, device);
}

void expect_shape(const char* name, const at::Tensor& x, std::initializer_list<int64_t> want) {
  const c10::IntArrayRef w(want.begin(), want.size());
  if (x.sizes() != w) value_error(std::string(name) + ": expected shape " + py_tuple(w) + ", got " + py_tuple(x.sizes()));
}

float eps(const char* name, double v) {
  if (!std::isfinite(v) || !(v > 0)) {
    value_error(std::string(name) + ": expected a positive finite float, got " + py_float(v));
  }
  return static_cast<float>(v);
}

mhc::MhcConstants constants(int64_t sinkhorn_iters, double hc_eps, double rms_eps, double norm_eps,
                            double post_mult) {
  if (sinkhorn_iters < 1 || sinkhorn_iters > kMaxSinkhornIters) {
    value_error("sinkhorn_iters: expected 1..1000, got " + std::to_string(sinkhorn_iters));
  }
  mhc::MhcConstants c;
  c.sinkhorn_iters = static_cast<int>(sinkhorn_iters);
  c.hc_eps = eps("hc_eps", hc_eps);
  c.rms_eps = eps("rms_eps", rms_eps);
  c.norm_eps = eps("norm_eps", norm_eps);
  if (!std::isfinite(post_mult)) value_error("post_mult: expected a finite float, got " + py_float(post_mult));
  c.post_mult = static_cast<float>(post_mult);
  return c;
}

Dims check_pre(const at::Tensor& residual, const at::Tensor& fn, const at::Tensor& scale, const at::Tensor& base,
               const std::optional<at::Tensor>& norm_weight) {
  const c10::Device dev = residual.device();
  check_tensor("residual", residual, at::kBFloat16, dev);
  check_tensor("fn", fn, at::kFloat, dev);
  check_tensor("scale", scale, at::kFloat, dev);
  check_tensor("base", base, at::kFloat, dev);
  check_tensor("norm_weight", norm_weight, at::kBFloat16, dev);
  return pre_shapes(residual, fn, scale, base, norm_weight);
}

void check_pre_outputs(const at::Tensor& y, const at::Tensor& post, const at::Tensor& comb, const Dims& d,
                       const c10::Device& device) {
  check_tensor("out[0] (y)", y, at::kBFloat16, device);
  check_tensor("out[1] (post)", post, at::kFloat, device);
  check_tensor("out[2] (comb)", comb, at::kFloat, device);
  expect_shape("out[0] (y)", y, {d.t, d.d});
  expect_shape("out[1] (post)", post, {d.t, d.hc});
  expect_shape("out[2] (comb)", comb, {d.t, d.hc, d.hc});
}

Dims check_post(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& post, const at::Tensor& comb) {
  const c10::Device dev = residual.device();
  check_tensor("x", x, at::kBFloat16, dev);
  check_tensor("residual", residual, at::kBFloat16, dev);
  check_tensor("post", post, at::kFloat, dev);
  check_tensor("comb", comb, at::kFloat, dev);
  const Dims d = pre_dims(residual);
  expect_shape("x", x, {d.t, d.d});
  expect_shape("post", post, {d.t, d.hc});
  expect_shape("comb", comb, {d.t, d.hc, d.hc});
  return d;
}

Dims check_post_pre(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& prev_post,
                    const at::Tensor& prev_comb, const at::Tensor& fn, const at::Tensor& scale,
                    const at::Tensor& base, const std::optional<at::Tensor>& norm_weight) {
  const c10::Device dev = residual.device();
  check_tensor("x", x, at::kBFloat16, dev);
  check_tensor("residual", residual, at::kBFloat16, dev);
  check_tensor("prev_post", prev_post, at::kFloat, dev);
  check_tensor("prev_comb", prev_comb, at::kFloat, dev);
  check_tensor("fn", fn, at::kFloat, dev);
  check_tensor("scale", scale, at::kFloat, dev);
  check_tensor("base", base, at::kFloat, dev);
  check_tensor("norm_weight", norm_weight, at::kBFloat16, dev);
  const Dims d = pre_shapes(residual, fn, scale, base, norm_weight);
  if (d.embed) value_error("residual: expected (T, hc, D) streams, got shape " + py_tuple(residual.sizes()));
  expect_shape("x", x, {d.t, d.d});
  expect_shape("prev_post", prev_post, {d.t, d.hc});
  expect_shape("prev_comb", prev_comb, {d.t, d.hc, d.hc});
  return d;
}

Dims check_head(const at::Tensor& residual, const at::Tensor& head_fn, const at::Tensor& head_scale,
                const at::Tensor& head_base) {
  const c10::Device dev = residual.device();
  check_tensor("residual", residual, at::kBFloat16, dev);
  check_tensor("head_fn", head_fn, at::kFloat, dev);
  check_tensor("head_scale", head_scale, at::kFloat, dev);
  check_tensor("head_base", head_base, at::kFloat, dev);
  const Dims d = pre_dims(residual);
  expect_shape("head_fn", head_fn, {d.hc, int64_t{d.hc} * d.d});
  expect_shape("head_scale", head_scale, {1});
  expect_shape("head_base", head_base, {d.hc});
  return d;
}

void check_contiguous(std::initializer_list<Named> tensors) {
  for (const Named& n : tensors) {
    if (n.tensor == nullptr || n.tensor->is_contiguous()) continue;
    const at::Tensor& x = *n.tensor;
    if (broadcast(x)) {
      value_error(std::string(n.name) + ": a zero-stride (broadcast) view of shape " + py_tuple(x.sizes()) +
                  ", which hcwarm does not expand into a copy; call .contiguous() first (a copy of that size)");
    }
    value_error(std::string(n.name) + ": expected a contiguous tensor (strides " + py_tuple(x.strides()) +
                " for shape " + py_tuple(x.sizes()) + "); call .contiguous() first");
  }
}

void check_aligned(std::initializer_list<Named> tensors) {
  for (const Named& n : tensors) {
    // The CUDA kernels move 16 bytes at a time (and TMA reads the residual).
    if (n.tensor == nullptr || !n.tensor->is_cuda() || n.tensor->numel() == 0) continue;
    const auto address = reinterpret_cast<uintptr_t>(n.tensor->data_ptr());
    if (address % 16 != 0) {
      char hex[32];
      std::snprintf(hex, sizeof hex, "%#llx", static_cast<unsigned long long>(address));
      value_error(std::string(n.name) + ": data pointer " + hex +
                  " is not 16-byte aligned (the CUDA kernels move 16 bytes at a time); a fresh tensor or .clone() "
                  "is aligned");
    }
  }
}

}  // namespace hcwarm::torch_ops
