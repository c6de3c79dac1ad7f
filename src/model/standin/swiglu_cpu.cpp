// The CPU backend of the SwiGLU MLP: blocks of up to 4 tokens share each
// weight load; 8-wide vector accumulators in f32 (GCC/Clang vector extensions,
// no ISA-specific intrinsics).
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "model/standin/swiglu_cpu.hpp"

// The 32-byte vectors only pass between inline functions of this file, so the
// ABI note GCC gives for them without -mavx does not matter.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace hcwarm::cpu {
using backends::SwigluBackend;
using backends::SwigluWeights;

namespace {

using v8f = float __attribute__((vector_size(32)));
using v8u16 = uint16_t __attribute__((vector_size(16)));
using v8u32 = uint32_t __attribute__((vector_size(32)));

constexpr int kTokenBlock = 4;    // tokens per weight pass
constexpr int64_t kGrain = 16;    // tokens per pool chunk

inline v8f load_bf16x8(const bf16* p) {
  v8u16 b;
  std::memcpy(&b, p, sizeof b);
  const v8u32 w = __builtin_convertvector(b, v8u32) << 16;  // bf16 is the top half of an f32
  v8f f;
  std::memcpy(&f, &w, sizeof f);
  return f;
}

inline v8f load_f32x8(const float* p) {
  v8f f;
  std::memcpy(&f, p, sizeof f);
  return f;
}

inline float hsum(v8f v) {
  return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

// out[t] = dot(w[0..n), x[t*ld .. t*ld+n)) for t < TB.
template <int TB>
void dot_rows(const bf16* w, const float* x, int64_t ld, int64_t n, float* out) {
  v8f acc[TB] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const v8f wv = load_bf16x8(w + i);
    for (int t = 0; t < TB; ++t) acc[t] += wv * load_f32x8(x + t * ld + i);
  }
  for (int t = 0; t < TB; ++t) {
    float s = hsum(acc[t]);
    for (int64_t j = i; j < n; ++j) s += w[j].to_float() * x[t * ld + j];
    out[t] = s;
  }
}

void dot_rows(int tb, const bf16* w, const float* x, int64_t ld, int64_t n, float* out) {
  switch (tb) {
    case 1: return dot_rows<1>(w, x, ld, n, out);
    case 2: return dot_rows<2>(w, x, ld, n, out);
    case 3: return dot_rows<3>(w, x, ld, n, out);
    default: return dot_rows<4>(w, x, ld, n, out);
  }
}

class CpuSwigluBackend final : public SwigluBackend {
 public:
  CpuSwigluBackend(std::shared_ptr<const SwigluWeights> w, std::shared_ptr<ThreadPool> pool)
      : w_(std::move(w)), pool_(std::move(pool)) {
    HCWARM_CHECK_ARG(w_ != nullptr && pool_ != nullptr, "cpu swiglu backend: weights and pool are required");
    w_->validate();
  }
  DeviceKind device_kind() const override { return DeviceKind::Cpu; }
  std::string name() const override { return "cpu"; }

  void forward(const bf16* x, bf16* out, int64_t T, Device&) override {
    pool_->parallel_for(T, kGrain, [&](int64_t begin, int64_t end) { run_tokens(x, out, begin, end); });
  }

 private:
  void run_tokens(const bf16* x, bf16* out, int64_t begin, int64_t end) const {
    const int64_t D = w_->hidden, F = w_->width;
    std::vector<float> xf(static_cast<size_t>(kTokenBlock * D));
    std::vector<float> h(static_cast<size_t>(kTokenBlock * F));
    float g[kTokenBlock], u[kTokenBlock], o[kTokenBlock];
    for (int64_t t0 = begin; t0 < end; t0 += kTokenBlock) {
      const int tb = static_cast<int>(std::min<int64_t>(kTokenBlock, end - t0));
      for (int64_t k = 0; k < tb * D; ++k) xf[k] = x[t0 * D + k].to_float();
      for (int64_t f = 0; f < F; ++f) {
        dot_rows(tb, w_->gate.data() + f * D, xf.data(), D, D, g);
        dot_rows(tb, w_->up.data() + f * D, xf.data(), D, D, u);
        for (int t = 0; t < tb; ++t) {
          const float silu = g[t] / (1.0f + std::exp(-g[t]));
          h[t * F + f] = round_to_bf16(silu * u[t]);
        }
      }
      for (int64_t d = 0; d < D; ++d) {
        dot_rows(tb, w_->down.data() + d * F, h.data(), F, F, o);
        for (int t = 0; t < tb; ++t) out[(t0 + t) * D + d] = bf16::from_float(o[t]);
      }
    }
  }

  std::shared_ptr<const SwigluWeights> w_;
  std::shared_ptr<ThreadPool> pool_;
};

}  // namespace

std::unique_ptr<SwigluBackend> make_cpu_swiglu_backend(std::shared_ptr<const SwigluWeights> weights,
                                                       std::shared_ptr<ThreadPool> pool) {
  return std::make_unique<CpuSwigluBackend>(std::move(weights), std::move(pool));
}

}  // namespace hcwarm::cpu
