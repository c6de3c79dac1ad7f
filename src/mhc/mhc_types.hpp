#pragma once
// Shapes, constants and argument views of the mHC pre step (docs/MATH.md, section 1).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/bf16.hpp"
#include "core/launch_context.hpp"

namespace hcwarm::mhc {

struct MhcDims {
  int hc_mult = 4;     // residual streams
  int hidden = 4096;   // D
  int mix() const { return hc_mult * (2 + hc_mult); }           // rows of fn: 24 for hc 4
  int64_t k() const { return int64_t{hc_mult} * hidden; }       // hc * D, the GEMM's K
};

struct MhcConstants {
  int sinkhorn_iters = 20;
  float hc_eps = 1e-6f;
  float rms_eps = 1e-6f;   // the prenorm over all hc*D values
  float norm_eps = 1e-6f;  // the fused sublayer RMSNorm
  float post_mult = 2.0f;
};

// What hc_pre reads: the hc residual streams, the first layer's token
// embedding standing for hc identical streams, or (Post: the fused sublayer
// boundary, hc_post_pre) the previous residual updated by the post step of the
// previous sublayer first (docs/MATH.md, section 6).
enum class HcPreInput { Residual, Embed, Post };
const char* to_string(HcPreInput input);  // "residual" | "embed" | "post"
// A kernel key's `input` param: "" (residual keys carry none) or one of the names above; else InvalidArgument.
HcPreInput parse_hc_pre_input(std::string_view name);

// Pointers into the memory of the device that runs the step. norm_weight may be
// null (no fused norm). Outputs are written for every token.
struct HcPreArgs {
  int64_t num_tokens = 0;
  const bf16* residual = nullptr;     // (T, hc, D); with input Embed, the embedding (T, D)
  const float* fn = nullptr;          // (mix, hc*D)
  const float* scale = nullptr;       // (3,)
  const float* base = nullptr;        // (mix,)
  const bf16* norm_weight = nullptr;  // (D,) or null
  bf16* y = nullptr;                  // (T, D)
  float* post = nullptr;              // (T, hc)
  float* comb = nullptr;              // (T, hc, hc)
  HcPreInput input = HcPreInput::Residual;
  // Input Post (hc_post_pre): residual is the previous residual (T, hc, D); the
  // call first writes new_residual = post step(x, residual, prev_post, prev_comb)
  // (bf16) and runs the pre step on it. new_residual may alias residual.
  const bf16* x = nullptr;            // (T, D): the previous sublayer's output
  const float* prev_post = nullptr;   // (T, hc)
  const float* prev_comb = nullptr;   // (T, hc, hc)
  bf16* new_residual = nullptr;       // (T, hc, D)
};

using hcwarm::LaunchContext;  // core/launch_context.hpp: the caller's stream and workspace

// Device pointers of one head call. Outputs are written for every token.
struct HcHeadArgs {
  int64_t num_tokens = 0;
  const bf16* residual = nullptr;  // (T, hc, D)
  const float* fn = nullptr;       // (hc, hc*D)   hc_head_fn
  const float* scale = nullptr;    // (1,)         hc_head_scale
  const float* base = nullptr;     // (hc,)        hc_head_base
  bf16* y = nullptr;               // (T, D)
};

}  // namespace hcwarm::mhc
