#include "mhc/reference.hpp"

#include <algorithm>
#include <string>
#include <cmath>
#include <vector>

namespace hcwarm::mhc {
namespace {

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// One token's row of K = kk values in double (into x), and mixes[m] =
// r * dot(fn[m, :], x) for its first `rows` fn rows, r = 1 / sqrt(mean(x^2) + rms_eps):
// the step hc_pre and the head share.
void rms_scaled_mixes(const bf16* row, const float* fn, int rows, int64_t kk, double rms_eps, std::vector<double>& x,
                      std::vector<double>& mixes) {
  double sumsq = 0;
  for (int64_t i = 0; i < kk; ++i) {
    x[i] = row[i].to_float();
    sumsq += x[i] * x[i];
  }
  const double r = 1.0 / std::sqrt(sumsq / static_cast<double>(kk) + rms_eps);
  for (int m = 0; m < rows; ++m) {
    const float* w = fn + m * kk;
    double acc = 0;
    for (int64_t i = 0; i < kk; ++i) acc += static_cast<double>(w[i]) * x[i];
    mixes[m] = acc * r;
  }
}

}  // namespace

namespace {

// fn, scale, base and the norm weight for hc streams of width d; `input` names
// the tensor they must fit in the messages.
void check_pre_weights(int64_t hc, int64_t d, const std::string& input, const HostTensor<float>& fn,
                       const HostTensor<float>& scale, const HostTensor<float>& base,
                       const HostTensor<bf16>* norm_weight) {
  const int64_t mix = hc * (2 + hc);
  HCWARM_CHECK_ARG(fn.shape() == Shape({mix, hc * d}), "fn must have shape {} for {}, got {}",
                   shape_string({mix, hc * d}), input, shape_string(fn.shape()));
  HCWARM_CHECK_ARG(scale.shape() == Shape({3}), "scale must have shape (3,), got {}",
                   shape_string(scale.shape()));
  HCWARM_CHECK_ARG(base.shape() == Shape({mix}), "base must have shape {}, got {}", shape_string({mix}),
                   shape_string(base.shape()));
  if (norm_weight != nullptr) {
    HCWARM_CHECK_ARG(norm_weight->shape() == Shape({d}), "norm_weight must have shape {}, got {}",
                     shape_string({d}), shape_string(norm_weight->shape()));
  }
}

}  // namespace

void check_hc_pre_shapes(const HostTensor<bf16>& residual, const HostTensor<float>& fn,
                         const HostTensor<float>& scale, const HostTensor<float>& base,
                         const HostTensor<bf16>* norm_weight) {
  HCWARM_CHECK_ARG(residual.rank() == 3, "residual must have shape (T, hc, D), got {}",
                   shape_string(residual.shape()));
  const int64_t hc = residual.dim(1);
  const int64_t d = residual.dim(2);
  HCWARM_CHECK_ARG(hc >= 1 && d >= 1, "residual must have hc >= 1 and D >= 1, got {}",
                   shape_string(residual.shape()));
  check_pre_weights(hc, d, "residual " + shape_string(residual.shape()), fn, scale, base, norm_weight);
}

void check_hc_pre_embed_shapes(const HostTensor<bf16>& embed, int hc, const HostTensor<float>& fn,
                               const HostTensor<float>& scale, const HostTensor<float>& base,
                               const HostTensor<bf16>* norm_weight) {
  HCWARM_CHECK_ARG(embed.rank() == 2 && embed.dim(1) >= 1, "embed must have shape (T, D) with D >= 1, got {}",
                   shape_string(embed.shape()));
  HCWARM_CHECK_ARG(hc >= 1, "hc_mult must be >= 1, got {}", hc);
  check_pre_weights(hc, embed.dim(1), fmt::format("embed {} with hc_mult {}", shape_string(embed.shape()), hc), fn,
                    scale, base, norm_weight);
}

void sinkhorn_reference(double* c, int hc, int iters, double eps) {
  auto at = [&](int i, int j) -> double& { return c[i * hc + j]; };
  auto normalize_rows = [&] {
    for (int i = 0; i < hc; ++i) {
      double s = 0;
      for (int j = 0; j < hc; ++j) s += at(i, j);
      for (int j = 0; j < hc; ++j) at(i, j) /= (s + eps);
    }
  };
  auto normalize_cols = [&] {
    for (int j = 0; j < hc; ++j) {
      double s = 0;
      for (int i = 0; i < hc; ++i) s += at(i, j);
      for (int i = 0; i < hc; ++i) at(i, j) /= (s + eps);
    }
  };
  // First iteration: softmax over each row, then + eps, then the column step.
  for (int i = 0; i < hc; ++i) {
    double m = at(i, 0);
    for (int j = 1; j < hc; ++j) m = std::max(m, at(i, j));
    double s = 0;
    for (int j = 0; j < hc; ++j) s += (at(i, j) = std::exp(at(i, j) - m));
    for (int j = 0; j < hc; ++j) at(i, j) = at(i, j) / s + eps;
  }
  normalize_cols();
  for (int it = 1; it < iters; ++it) {
    normalize_rows();
    normalize_cols();
  }
}

HcPreResult hc_pre_reference(const HostTensor<bf16>& residual, const HostTensor<float>& fn,
                             const HostTensor<float>& scale, const HostTensor<float>& base,
                             const HostTensor<bf16>* norm_weight, const MhcConstants& k) {
  check_hc_pre_shapes(residual, fn, scale, base, norm_weight);
  const int64_t t_count = residual.dim(0);
  const int hc = static_cast<int>(residual.dim(1));
  const int64_t d = residual.dim(2);
  const int64_t kk = hc * d;
  const int mix = hc * (2 + hc);

  HcPreResult out{HostTensor<bf16>({t_count, d}), HostTensor<float>({t_count, hc}),
                  HostTensor<float>({t_count, hc, hc}), norm_weight != nullptr};
  std::vector<double> x(static_cast<size_t>(kk));
  std::vector<double> mixes(static_cast<size_t>(mix));
  std::vector<double> pre(static_cast<size_t>(hc));
  std::vector<double> c(static_cast<size_t>(hc * hc));
  std::vector<double> y(static_cast<size_t>(d));

  for (int64_t t = 0; t < t_count; ++t) {
    rms_scaled_mixes(residual.data() + t * kk, fn.data(), mix, kk, k.rms_eps, x, mixes);
    for (int i = 0; i < hc; ++i) {
      pre[i] = sigmoid(mixes[i] * scale[0] + base[i]) + k.hc_eps;
      out.post[t * hc + i] = static_cast<float>(k.post_mult * sigmoid(mixes[hc + i] * scale[1] + base[hc + i]));
    }
    for (int i = 0; i < hc * hc; ++i) c[i] = mixes[2 * hc + i] * scale[2] + base[2 * hc + i];
    sinkhorn_reference(c.data(), hc, k.sinkhorn_iters, k.hc_eps);
    for (int i = 0; i < hc * hc; ++i) out.comb[t * hc * hc + i] = static_cast<float>(c[i]);

    for (int64_t j = 0; j < d; ++j) {
      double acc = 0;
      for (int i = 0; i < hc; ++i) acc += pre[i] * x[i * d + j];
      y[j] = acc;
    }
    bf16* y_out = out.y.data() + t * d;
    if (norm_weight == nullptr) {
      for (int64_t j = 0; j < d; ++j) y_out[j] = bf16::from_float(static_cast<float>(y[j]));
    } else {
      double ss = 0;
      for (int64_t j = 0; j < d; ++j) {
        y[j] = round_to_bf16(static_cast<float>(y[j]));
        ss += y[j] * y[j];
      }
      const double rn = 1.0 / std::sqrt(ss / static_cast<double>(d) + k.norm_eps);
      for (int64_t j = 0; j < d; ++j) {
        y_out[j] = bf16::from_float(static_cast<float>(y[j] * rn * (*norm_weight)[j].to_float()));
      }
    }
  }
  return out;
}

HostTensor<bf16> hc_post_reference(const HostTensor<bf16>& out, const HostTensor<bf16>& residual,
                                   const HostTensor<float>& post, const HostTensor<float>& comb) {
  HCWARM_CHECK_ARG(residual.rank() == 3, "residual must have shape (T, hc, D), got {}",
                   shape_string(residual.shape()));
  const int64_t t_count = residual.dim(0);
  const int64_t hc = residual.dim(1);
  const int64_t d = residual.dim(2);
  HCWARM_CHECK_ARG(out.shape() == Shape({t_count, d}), "out must have shape {}, got {}",
                   shape_string({t_count, d}), shape_string(out.shape()));
  HCWARM_CHECK_ARG(post.shape() == Shape({t_count, hc}), "post must have shape {}, got {}",
                   shape_string({t_count, hc}), shape_string(post.shape()));
  HCWARM_CHECK_ARG(comb.shape() == Shape({t_count, hc, hc}), "comb must have shape {}, got {}",
                   shape_string({t_count, hc, hc}), shape_string(comb.shape()));
  HostTensor<bf16> result(residual.shape());
  for (int64_t t = 0; t < t_count; ++t) {
    for (int64_t j = 0; j < hc; ++j) {
      for (int64_t e = 0; e < d; ++e) {
        double acc = static_cast<double>(post[t * hc + j]) * out[t * d + e].to_float();
        for (int64_t i = 0; i < hc; ++i) {
          acc += static_cast<double>(comb[(t * hc + i) * hc + j]) * residual[(t * hc + i) * d + e].to_float();
        }
        result[(t * hc + j) * d + e] = bf16::from_float(static_cast<float>(acc));
      }
    }
  }
  return result;
}

void check_hc_head_shapes(const HostTensor<bf16>& residual, const HostTensor<float>& fn,
                          const HostTensor<float>& scale, const HostTensor<float>& base) {
  HCWARM_CHECK_ARG(residual.rank() == 3, "hc_head: residual must have shape (T, hc, D), got {}",
                   shape_string(residual.shape()));
  const int64_t hc = residual.dim(1);
  const int64_t d = residual.dim(2);
  HCWARM_CHECK_ARG(hc >= 1 && d >= 1, "hc_head: residual must have hc >= 1 and D >= 1, got {}",
                   shape_string(residual.shape()));
  HCWARM_CHECK_ARG(fn.shape() == Shape({hc, hc * d}), "hc_head: fn must have shape {} for residual {}, got {}",
                   shape_string({hc, hc * d}), shape_string(residual.shape()), shape_string(fn.shape()));
  HCWARM_CHECK_ARG(scale.shape() == Shape({1}), "hc_head: scale must have shape (1,), got {}",
                   shape_string(scale.shape()));
  HCWARM_CHECK_ARG(base.shape() == Shape({hc}), "hc_head: base must have shape {}, got {}", shape_string({hc}),
                   shape_string(base.shape()));
}

HostTensor<bf16> hc_head_reference(const HostTensor<bf16>& residual, const HostTensor<float>& fn,
                                   const HostTensor<float>& scale, const HostTensor<float>& base,
                                   const MhcConstants& k) {
  check_hc_head_shapes(residual, fn, scale, base);
  const int64_t t_count = residual.dim(0);
  const int hc = static_cast<int>(residual.dim(1));
  const int64_t d = residual.dim(2);
  const int64_t kk = hc * d;
  HostTensor<bf16> y({t_count, d});
  std::vector<double> x(static_cast<size_t>(kk));
  std::vector<double> mixes(static_cast<size_t>(hc));
  std::vector<double> pre(static_cast<size_t>(hc));
  for (int64_t t = 0; t < t_count; ++t) {
    rms_scaled_mixes(residual.data() + t * kk, fn.data(), hc, kk, k.rms_eps, x, mixes);
    for (int i = 0; i < hc; ++i) pre[i] = sigmoid(mixes[i] * scale[0] + base[i]) + k.hc_eps;
    for (int64_t j = 0; j < d; ++j) {
      double acc = 0;
      for (int i = 0; i < hc; ++i) acc += pre[i] * x[i * d + j];
      y[t * d + j] = bf16::from_float(static_cast<float>(acc));
    }
  }
  return y;
}

HostTensor<bf16> broadcast_streams(const HostTensor<bf16>& embed, int hc) {
  HCWARM_CHECK_ARG(embed.rank() == 2, "embed must have shape (T, D), got {}", shape_string(embed.shape()));
  HCWARM_CHECK_ARG(hc >= 1, "hc_mult must be >= 1, got {}", hc);
  const int64_t t_count = embed.dim(0);
  const int64_t d = embed.dim(1);
  HostTensor<bf16> out({t_count, hc, d});
  for (int64_t t = 0; t < t_count; ++t) {
    for (int i = 0; i < hc; ++i) std::copy_n(embed.data() + t * d, d, out.data() + (t * hc + i) * d);
  }
  return out;
}

HcPreResult hc_pre_embed_reference(const HostTensor<bf16>& embed, int hc, const HostTensor<float>& fn,
                                   const HostTensor<float>& scale, const HostTensor<float>& base,
                                   const HostTensor<bf16>* norm_weight, const MhcConstants& constants) {
  return hc_pre_reference(broadcast_streams(embed, hc), fn, scale, base, norm_weight, constants);
}

void check_hc_post_pre_shapes(const HostTensor<bf16>& x, const HostTensor<bf16>& residual,
                              const HostTensor<float>& prev_post, const HostTensor<float>& prev_comb,
                              const HostTensor<float>& fn, const HostTensor<float>& scale,
                              const HostTensor<float>& base, const HostTensor<bf16>* norm_weight) {
  check_hc_pre_shapes(residual, fn, scale, base, norm_weight);
  const int64_t t_count = residual.dim(0);
  const int64_t hc = residual.dim(1);
  const int64_t d = residual.dim(2);
  HCWARM_CHECK_ARG(x.shape() == Shape({t_count, d}), "x must have shape {} for residual {}, got {}",
                   shape_string({t_count, d}), shape_string(residual.shape()), shape_string(x.shape()));
  HCWARM_CHECK_ARG(prev_post.shape() == Shape({t_count, hc}), "prev_post must have shape {} for residual {}, got {}",
                   shape_string({t_count, hc}), shape_string(residual.shape()), shape_string(prev_post.shape()));
  HCWARM_CHECK_ARG(prev_comb.shape() == Shape({t_count, hc, hc}),
                   "prev_comb must have shape {} for residual {}, got {}", shape_string({t_count, hc, hc}),
                   shape_string(residual.shape()), shape_string(prev_comb.shape()));
}

HcPostPreResult hc_post_pre_reference(const HostTensor<bf16>& x, const HostTensor<bf16>& residual,
                                      const HostTensor<float>& prev_post, const HostTensor<float>& prev_comb,
                                      const HostTensor<float>& fn, const HostTensor<float>& scale,
                                      const HostTensor<float>& base, const HostTensor<bf16>* norm_weight,
                                      const MhcConstants& constants) {
  check_hc_post_pre_shapes(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight);
  // The unfused pair, with both bf16 roundings: the new residual as stored, then the pre step on it.
  HostTensor<bf16> next = hc_post_reference(x, residual, prev_post, prev_comb);
  HcPreResult pre = hc_pre_reference(next, fn, scale, base, norm_weight, constants);
  return {std::move(next), std::move(pre)};
}

}  // namespace hcwarm::mhc
