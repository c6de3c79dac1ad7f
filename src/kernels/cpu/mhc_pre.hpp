#pragma once
// mHC pre on the CPU: the two stages of hc_pre (docs/MATH.md, section 2) as templates.
// Compiled twice: by the host JIT (generated TU, -O3 -march=<host>, one
// specialization per split bucket) and into libhcwarm as the "generic" variant
// (NUM_SPLITS = 0 and HIDDEN = 0: taken from the params at run time; INPUT =
// hcwarm_mhc::kInputRuntime: residual streams, the first layer's embedding or
// the fused sublayer boundary, as the params say).
// Standard library only. The library threads the work: it calls
//   partial(items [b, e)) with item = token_block * num_splits + split,
//   then finish(tokens [b, e)), each range on one thread.
//
// Precision: the GEMM accumulates in f32 (16 independent lanes per dot product,
// so -O3 vectorizes it; each lane sums K / (16 * num_splits) products), the split
// reduction, rsqrt, sigmoids and Sinkhorn run in double, y = sum_i pre_i * x_i
// in double, rounded to f32 then bf16 (as the reference). With the fused norm the
// mean of squares is taken over the bf16-rounded y (f32 lanes, double total),
// and y * rn * w in f32.
//
// Input POST (the fused sublayer boundary, docs/MATH.md section 6): split s of
// a token block covers hidden positions [d0, d1) of every stream, so each new
// residual element is computed once (cpu/mhc_post.hpp, as hc_post computes it),
// stored to residual_out and fed to the dot products as columns j * D + d. All
// hc streams of a position are read before any is written: residual_out may
// alias residual. The finish stage reads the stored residual_out.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/mhc_params.hpp"
#include "cpu/mhc_post.hpp"

namespace hcwarm_kernels::cpu {

inline float bf16_bits_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even; NaN stays NaN (quiet bit set).
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

inline constexpr int kLanes = 16;        // independent f32 accumulators per dot product
inline constexpr int kTokenBlock = 4;    // tokens sharing one pass over an fn segment
inline constexpr int kKBlock = 512;      // k values converted to f32 at a time

// K-part [k0, k1) of split s: chunks of ceil(K / S) rounded up to kLanes.
inline void split_range(int64_t k, int s, int num_splits, int64_t* k0, int64_t* k1) {
  int64_t chunk = (k + num_splits - 1) / num_splits;
  chunk = (chunk + kLanes - 1) / kLanes * kLanes;
  *k0 = static_cast<int64_t>(s) * chunk;
  if (*k0 > k) *k0 = k;
  *k1 = *k0 + chunk;
  if (*k1 > k) *k1 = k;
}

// What `residual` is (hcwarm_mhc::kInput*): INPUT, or the params' for hcwarm_mhc::kInputRuntime.
template <int INPUT>
inline int input_kind(const hcwarm_mhc_pre_params* p) {
  return INPUT == hcwarm_mhc::kInputRuntime ? p->input : INPUT;
}

// Hidden positions per block of the POST partial: its hc streams fill one kKBlock
// buffer, in whole lane groups.
template <int HC>
inline constexpr int kPostBlock = kKBlock / HC / kLanes * kLanes;

template <int NUM_SPLITS, int HC, int HIDDEN, int INPUT = hcwarm_mhc::kInputResidual>
inline int check_params(const hcwarm_mhc_pre_params* p) {
  static_assert(NUM_SPLITS >= 0, "NUM_SPLITS must be >= 1 (or 0: taken from the params at run time)");
  static_assert(INPUT == hcwarm_mhc::kInputResidual || INPUT == hcwarm_mhc::kInputEmbed ||
                    INPUT == hcwarm_mhc::kInputPost || INPUT == hcwarm_mhc::kInputRuntime,
                "INPUT must be hcwarm_mhc::kInputResidual, kInputEmbed, kInputPost or kInputRuntime");
  static_assert(HC >= 1 && HC <= 8, "HC (hc_mult) must be in [1, 8]");
  static_assert(kPostBlock<HC> >= kLanes, "a POST block must hold at least one lane group per stream");
  static_assert(HIDDEN >= 0 && HIDDEN % 16 == 0, "HIDDEN must be a multiple of 16 (or 0: run time)");
  if (p == nullptr || p->num_tokens < 0) return hcwarm_mhc::kBadArgument;
  if (p->hc_mult != HC) return hcwarm_mhc::kBadShape;
  if (HIDDEN != 0 && p->hidden != HIDDEN) return hcwarm_mhc::kBadShape;
  if (p->hidden <= 0 || p->hidden % 16 != 0) return hcwarm_mhc::kBadShape;
  if (NUM_SPLITS != 0 && p->num_splits != NUM_SPLITS) return hcwarm_mhc::kBadShape;
  if (p->num_splits < 1 || p->num_parts != p->num_splits) return hcwarm_mhc::kBadShape;
  if (p->input != hcwarm_mhc::kInputResidual && p->input != hcwarm_mhc::kInputEmbed &&
      p->input != hcwarm_mhc::kInputPost) {
    return hcwarm_mhc::kBadArgument;
  }
  if (INPUT != hcwarm_mhc::kInputRuntime && p->input != INPUT) return hcwarm_mhc::kBadShape;
  if (p->input == hcwarm_mhc::kInputPost && (p->post_x == nullptr || p->prev_post == nullptr ||
                                            p->prev_comb == nullptr || p->residual_out == nullptr)) {
    return hcwarm_mhc::kBadArgument;
  }
  return hcwarm_mhc::kOk;
}

// Input POST: the new residual of token t at hidden positions [c, c + n), all
// streams, stored to residual_out and left in xo as HC runs of n values (stream j
// at xo + j * n). Each position's hc inputs are read before its outputs are written.
template <int HC>
inline void post_columns(const hcwarm_mhc_pre_params* p, int64_t t, int64_t D, int64_t c, int n, float* xo) {
  const int64_t K = HC * D;
  const uint16_t* res = p->residual + t * K;
  uint16_t* out = p->residual_out + t * K;
  const uint16_t* x = p->post_x + t * D;
  const float* post = p->prev_post + t * HC;
  const float* comb = p->prev_comb + t * HC * HC;
  for (int e = 0; e < n; ++e) {
    const int64_t d = c + e;
    float r[HC];
    for (int i = 0; i < HC; ++i) r[i] = bf16_bits_to_float(res[i * D + d]);
    const float xv = bf16_bits_to_float(x[d]);
    uint16_t nb[HC];
    for (int j = 0; j < HC; ++j) nb[j] = float_to_bf16_bits(post_value(HC, j, post, comb, xv, r));
    for (int j = 0; j < HC; ++j) {
      out[j * D + d] = nb[j];
      xo[j * n + e] = bf16_bits_to_float(nb[j]);
    }
  }
}

// Stage (a). Items [item_begin, item_end) of (ceil(T / kTokenBlock) x num_splits).
// With the embedding as input, column k of token t's row is e[t, k % D]; with
// POST, split s covers hidden positions (not columns) of every stream.
template <int NUM_SPLITS, int HC, int HIDDEN, int INPUT = hcwarm_mhc::kInputResidual>
int mhc_pre_partial(const hcwarm_mhc_pre_params* p, int64_t item_begin, int64_t item_end) {
  if (int rc = check_params<NUM_SPLITS, HC, HIDDEN, INPUT>(p); rc != hcwarm_mhc::kOk) return rc;
  const int kind = input_kind<INPUT>(p);
  const bool embed = kind == hcwarm_mhc::kInputEmbed;
  const bool post = kind == hcwarm_mhc::kInputPost;
  // A block of xs: `runs` runs of n values; run g holds the columns [g * D + kb, + n) (kb: the block start).
  const int runs = post ? HC : 1;
  const int step = post ? kPostBlock<HC> : kKBlock;
  constexpr int kMix = HC * (2 + HC);
  static_assert(kMix + 1 <= hcwarm_mhc::kPartialStride, "mix columns + sum of squares must fit a partial row");
  const int S = NUM_SPLITS != 0 ? NUM_SPLITS : p->num_splits;
  const int64_t D = HIDDEN != 0 ? HIDDEN : p->hidden;
  const int64_t K = HC * D;
  const int64_t T = p->num_tokens;

  alignas(64) float xs[kTokenBlock][kKBlock];
  alignas(64) float acc[kTokenBlock][kMix][kLanes];
  alignas(64) float ss[kTokenBlock][kLanes];

  for (int64_t item = item_begin; item < item_end; ++item) {
    const int64_t tb = item / S;
    const int s = static_cast<int>(item % S);
    const int64_t t0 = tb * kTokenBlock;
    if (t0 >= T) break;
    const int nt = static_cast<int>(T - t0 < kTokenBlock ? T - t0 : kTokenBlock);
    // The split's range: of the K columns, or with POST of the D hidden positions.
    int64_t k0, k1;
    split_range(post ? D : K, s, S, &k0, &k1);
    std::memset(acc, 0, sizeof acc);
    std::memset(ss, 0, sizeof ss);

    for (int64_t kb = k0; kb < k1; kb += step) {
      const int n = static_cast<int>(k1 - kb < step ? k1 - kb : step);  // multiple of kLanes
      for (int tok = 0; tok < nt; ++tok) {
        float* xo = xs[tok];
        if (post) {
          post_columns<HC>(p, t0 + tok, D, kb, n, xo);
        } else if (embed) {
          const uint16_t* er = p->residual + (t0 + tok) * D;
          int64_t c = kb % D;
          for (int k = 0; k < n; ++k) {
            xo[k] = bf16_bits_to_float(er[c]);
            if (++c == D) c = 0;
          }
        } else {
          const uint16_t* xr = p->residual + (t0 + tok) * K + kb;
          for (int k = 0; k < n; ++k) xo[k] = bf16_bits_to_float(xr[k]);
        }
        float* sl = ss[tok];
        for (int k = 0; k < runs * n; k += kLanes) {
          for (int l = 0; l < kLanes; ++l) sl[l] += xo[k + l] * xo[k + l];
        }
      }
      for (int m = 0; m < kMix; ++m) {
        for (int g = 0; g < runs; ++g) {
          const float* f = p->fn + m * K + g * D + kb;
          for (int tok = 0; tok < nt; ++tok) {
            float a[kLanes];
            for (int l = 0; l < kLanes; ++l) a[l] = acc[tok][m][l];
            const float* xo = xs[tok] + g * n;
            for (int k = 0; k < n; k += kLanes) {
              for (int l = 0; l < kLanes; ++l) a[l] += f[k + l] * xo[k + l];
            }
            for (int l = 0; l < kLanes; ++l) acc[tok][m][l] = a[l];
          }
        }
      }
    }
    for (int tok = 0; tok < nt; ++tok) {
      float* out = p->partials + ((t0 + tok) * S + s) * hcwarm_mhc::kPartialStride;
      for (int m = 0; m < kMix; ++m) {
        double v = 0;
        for (int l = 0; l < kLanes; ++l) v += acc[tok][m][l];
        out[m] = static_cast<float>(v);
      }
      double v = 0;
      for (int l = 0; l < kLanes; ++l) v += ss[tok][l];
      out[kMix] = static_cast<float>(v);
    }
  }
  return hcwarm_mhc::kOk;
}

// The hc x hc Sinkhorn projection, in place (docs/MATH.md, section 2).
template <int HC>
inline void sinkhorn(double (&c)[HC][HC], int iters, double eps) {
  for (int i = 0; i < HC; ++i) {
    double m = c[i][0];
    for (int j = 1; j < HC; ++j) m = c[i][j] > m ? c[i][j] : m;
    double s = 0;
    for (int j = 0; j < HC; ++j) s += (c[i][j] = std::exp(c[i][j] - m));
    for (int j = 0; j < HC; ++j) c[i][j] = c[i][j] / s + eps;
  }
  for (int it = 0; it < iters; ++it) {
    if (it > 0) {
      for (int i = 0; i < HC; ++i) {
        double s = 0;
        for (int j = 0; j < HC; ++j) s += c[i][j];
        for (int j = 0; j < HC; ++j) c[i][j] /= (s + eps);
      }
    }
    for (int j = 0; j < HC; ++j) {
      double s = 0;
      for (int i = 0; i < HC; ++i) s += c[i][j];
      for (int i = 0; i < HC; ++i) c[i][j] /= (s + eps);
    }
  }
}

// Stage (b). Tokens [t_begin, t_end).
template <int NUM_SPLITS, int HC, int HIDDEN, bool FUSED_NORM, int INPUT = hcwarm_mhc::kInputResidual>
int mhc_pre_finish(const hcwarm_mhc_pre_params* p, int64_t t_begin, int64_t t_end) {
  if (int rc = check_params<NUM_SPLITS, HC, HIDDEN, INPUT>(p); rc != hcwarm_mhc::kOk) return rc;
  const int kind = input_kind<INPUT>(p);
  const bool embed = kind == hcwarm_mhc::kInputEmbed;
  // POST: the partial stage stored the new residual; y is taken from it.
  const uint16_t* streams = kind == hcwarm_mhc::kInputPost ? p->residual_out : p->residual;
  if (FUSED_NORM && p->norm_weight == nullptr) return hcwarm_mhc::kBadArgument;
  constexpr int kMix = HC * (2 + HC);
  const int S = NUM_SPLITS != 0 ? NUM_SPLITS : p->num_splits;
  const int64_t D = HIDDEN != 0 ? HIDDEN : p->hidden;
  const int64_t K = HC * D;
  if (t_end > p->num_tokens) t_end = p->num_tokens;

  constexpr int kYBlock = 1024;
  alignas(64) double yb[kYBlock];
  for (int64_t t = t_begin; t < t_end; ++t) {
    double mix[kMix + 1] = {};
    const float* part = p->partials + t * S * hcwarm_mhc::kPartialStride;
    for (int s = 0; s < S; ++s) {
      for (int m = 0; m <= kMix; ++m) mix[m] += part[s * hcwarm_mhc::kPartialStride + m];
    }
    const double r = 1.0 / std::sqrt(mix[kMix] / static_cast<double>(K) + p->rms_eps);
    double pre[HC];
    double c[HC][HC];
    for (int i = 0; i < HC; ++i) {
      const double a = mix[i] * r * p->scale[0] + p->base[i];
      pre[i] = 1.0 / (1.0 + std::exp(-a)) + p->hc_eps;
      const double b = mix[HC + i] * r * p->scale[1] + p->base[HC + i];
      p->post[t * HC + i] = static_cast<float>(p->post_mult / (1.0 + std::exp(-b)));
    }
    for (int i = 0; i < HC; ++i) {
      for (int j = 0; j < HC; ++j) {
        c[i][j] = mix[2 * HC + i * HC + j] * r * p->scale[2] + p->base[2 * HC + i * HC + j];
      }
    }
    sinkhorn<HC>(c, p->sinkhorn_iters, p->hc_eps);
    for (int i = 0; i < HC; ++i) {
      for (int j = 0; j < HC; ++j) p->comb[(t * HC + i) * HC + j] = static_cast<float>(c[i][j]);
    }

    // Stream i of token t: the embedding itself for every i, or residual[t, i] (new_residual with POST).
    const uint16_t* x = streams + t * (embed ? D : K);
    const int64_t stream_stride = embed ? 0 : D;
    uint16_t* y = p->y + t * D;
    double sumsq = 0;
    // Pass 1 writes bf16(y); with the norm, pass 2 rescales it in place.
    for (int64_t j0 = 0; j0 < D; j0 += kYBlock) {
      const int n = static_cast<int>(D - j0 < kYBlock ? D - j0 : kYBlock);
      for (int j = 0; j < n; ++j) yb[j] = pre[0] * static_cast<double>(bf16_bits_to_float(x[j0 + j]));
      for (int i = 1; i < HC; ++i) {
        const uint16_t* xi = x + i * stream_stride + j0;
        const double w = pre[i];
        for (int j = 0; j < n; ++j) yb[j] += w * static_cast<double>(bf16_bits_to_float(xi[j]));
      }
      float lanes[kLanes] = {};
      for (int j = 0; j < n; j += kLanes) {
        for (int l = 0; l < kLanes; ++l) {
          const uint16_t b = float_to_bf16_bits(static_cast<float>(yb[j + l]));
          y[j0 + j + l] = b;
          const float v = bf16_bits_to_float(b);
          lanes[l] += v * v;
        }
      }
      if (FUSED_NORM) {
        for (int l = 0; l < kLanes; ++l) sumsq += lanes[l];
      }
    }
    if (FUSED_NORM) {
      const float rn = static_cast<float>(1.0 / std::sqrt(sumsq / static_cast<double>(D) + p->norm_eps));
      const uint16_t* w = p->norm_weight;
      for (int64_t j = 0; j < D; ++j) {
        y[j] = float_to_bf16_bits(bf16_bits_to_float(y[j]) * rn * bf16_bits_to_float(w[j]));
      }
    }
  }
  return hcwarm_mhc::kOk;
}

}  // namespace hcwarm_kernels::cpu
