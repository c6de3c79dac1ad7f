#pragma once
// The operators' argument checks: the rules and messages of the Python package's
// _checks.py and _torch_launch.py (the NumPy path and the fallback operators keep
// using those), raised as c10::TypeError / c10::ValueError, which reach Python as
// TypeError / ValueError naming the argument. Everything is checked on every call,
// before anything is allocated or written.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <initializer_list>
#include <optional>

#include "mhc/mhc_types.hpp"

namespace hcwarm::torch_ops {

struct Dims {
  int64_t t = 0;
  int hc = 0;
  int d = 0;
  bool embed = false;  // hc_pre's residual is the first layer's embedding (T, D)
};

// dtype, then device (that of residual), as _torch_launch.check_tensor; a null optional is an absent tensor.
void check_tensor(const char* name, const at::Tensor& x, at::ScalarType dtype, const c10::Device& device);
void check_tensor(const char* name, const std::optional<at::Tensor>& x, at::ScalarType dtype,
                  const c10::Device& device);
void expect_shape(const char* name, const at::Tensor& x, std::initializer_list<int64_t> want);

mhc::MhcConstants constants(int64_t sinkhorn_iters, double hc_eps, double rms_eps, double norm_eps,
                            double post_mult);
float eps(const char* name, double value);

// Dtypes, devices and shapes of each op's inputs.
Dims check_pre(const at::Tensor& residual, const at::Tensor& fn, const at::Tensor& scale, const at::Tensor& base,
               const std::optional<at::Tensor>& norm_weight);
void check_pre_outputs(const at::Tensor& y, const at::Tensor& post, const at::Tensor& comb, const Dims& d,
                       const c10::Device& device);
Dims check_post(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& post, const at::Tensor& comb);
Dims check_post_pre(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& prev_post,
                    const at::Tensor& prev_comb, const at::Tensor& fn, const at::Tensor& scale,
                    const at::Tensor& base, const std::optional<at::Tensor>& norm_weight);
Dims check_head(const at::Tensor& residual, const at::Tensor& head_fn, const at::Tensor& head_scale,
                const at::Tensor& head_base);

// What every launch relies on: each tensor contiguous (a broadcast view named as
// such), and on CUDA the ones the kernels read or write 16 bytes at a time
// 16-byte aligned. A null tensor is an absent optional one.
struct Named {
  const char* name;
  const at::Tensor* tensor;
};
void check_contiguous(std::initializer_list<Named> tensors);
void check_aligned(std::initializer_list<Named> tensors);

}  // namespace hcwarm::torch_ops
