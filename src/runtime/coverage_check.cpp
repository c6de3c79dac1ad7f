#include "runtime/coverage_check.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "mhc/hc_post_pre.hpp"
#include "mhc/split_policy.hpp"

namespace hcwarm::runtime {
namespace {

// Zeroed device buffers for the largest call of the check.
struct Buffers {
  DeviceBuffer residual, embed, fn, scale, base, w, y, post, comb, head_fn, out, new_residual, prev_post, prev_comb;
  Buffers(Device& d, const mhc::MhcDims& m, int64_t t) {
    auto zeros = [&](size_t bytes) {
      DeviceBuffer b(d, std::max<size_t>(bytes, 16));
      d.fill_zero(b.get(), b.bytes());
      return b;
    };
    const size_t T = static_cast<size_t>(t);
    residual = zeros(T * m.k() * sizeof(bf16));
    embed = zeros(T * m.hidden * sizeof(bf16));
    fn = zeros(static_cast<size_t>(m.mix()) * m.k() * sizeof(float));
    scale = zeros(3 * sizeof(float));
    base = zeros(static_cast<size_t>(m.mix()) * sizeof(float));
    w = zeros(static_cast<size_t>(m.hidden) * sizeof(bf16));
    y = zeros(T * m.hidden * sizeof(bf16));
    post = zeros(T * m.hc_mult * sizeof(float));
    comb = zeros(T * m.hc_mult * m.hc_mult * sizeof(float));
    head_fn = zeros(static_cast<size_t>(m.hc_mult) * m.k() * sizeof(float));
    out = zeros(T * m.hidden * sizeof(bf16));
    new_residual = zeros(T * m.k() * sizeof(bf16));
    prev_post = zeros(T * m.hc_mult * sizeof(float));
    prev_comb = zeros(T * m.hc_mult * m.hc_mult * sizeof(float));
  }
};

// Restores the JIT's compile switch on every exit.
struct NoCompile {
  jit::JitRuntime* jit;
  explicit NoCompile(jit::JitRuntime* j) : jit(j) {
    if (jit) jit->set_compile_allowed(false);
  }
  ~NoCompile() {
    if (jit) jit->set_compile_allowed(true);
  }
};

}  // namespace

CoverageReport check_kernel_coverage(const CoverageOps& ops, Device& device, jit::JitRuntime* jit,
                                     int64_t max_num_tokens, bool fused_norm) {
  CoverageReport r;
  const mhc::MhcDims dims = ops.hc_pre.dims();
  for (const mhc::SplitBucket& b : mhc::split_buckets(max_num_tokens, dims.k(), ops.hc_pre.num_sms())) {
    r.token_counts.push_back(b.min_tokens);
  }
  if (r.token_counts.empty()) return r;
  const int64_t largest = *std::max_element(r.token_counts.begin(), r.token_counts.end());
  Buffers buf(device, dims, largest);
  device.synchronize();
  const size_t events_before = jit ? jit->events().size() : 0;
  const NoCompile no_compile(jit);
  const bool fast = ops.hc_pre.uses_fast_path();

  auto attempt = [&](const std::string& what, const std::function<void()>& call) {
    ++r.calls;
    try {
      call();
      device.synchronize();
    } catch (const Error& e) {
      r.missing.push_back(fmt::format("{}: {}", what, e.message()));
    }
  };
  for (const int64_t T : r.token_counts) {
    for (const mhc::HcPreInput input : {mhc::HcPreInput::Residual, mhc::HcPreInput::Embed, mhc::HcPreInput::Post}) {
      const int splits = ops.hc_pre.kernel_splits(T, input);
      // Past the fused range the boundary is hc_post + hc_pre, whose kernels are checked on their own.
      if (input == mhc::HcPreInput::Post && !mhc::boundary_fuses(ops.hc_pre.backend(), dims, ops.hc_pre.num_sms(), T)) {
        continue;
      }
      // The boundary's family is its own (mhc_post_pre): the name says which one warmup left out.
      const std::string what =
          fmt::format("{} (input={}, {}) num_splits={} (T={})",
                      input == mhc::HcPreInput::Post ? "mhc_post_pre" : "mhc_pre", mhc::to_string(input),
                      fused_norm ? "fused norm" : "no norm", splits, T);
      if (fast && !ops.hc_pre.specialized_loaded(T, fused_norm, input)) {
        r.missing.push_back(what + ": warmup did not load its kernels into the op (a CUDA-graph capture would "
                                   "refuse this call)");
        continue;
      }
      attempt(what, [&] {
        mhc::HcPreArgs a;
        a.num_tokens = T;
        a.residual = input == mhc::HcPreInput::Embed ? buf.embed.as<bf16>() : buf.residual.as<bf16>();
        a.fn = buf.fn.as<float>();
        a.scale = buf.scale.as<float>();
        a.base = buf.base.as<float>();
        a.norm_weight = fused_norm ? buf.w.as<bf16>() : nullptr;
        a.y = buf.y.as<bf16>();
        a.post = buf.post.as<float>();
        a.comb = buf.comb.as<float>();
        a.input = input;
        if (input == mhc::HcPreInput::Post) {
          a.x = buf.out.as<bf16>();
          a.prev_post = buf.prev_post.as<float>();
          a.prev_comb = buf.prev_comb.as<float>();
          a.new_residual = buf.new_residual.as<bf16>();
        }
        ops.hc_pre.run(a);
      });
    }
    const std::string post_what = fmt::format("mhc_post (T={})", T);
    if (!ops.hc_post.specialized_loaded()) {
      r.missing.push_back(post_what + ": warmup did not load the kernel into the op");
    } else {
      attempt(post_what, [&] {
        ops.hc_post.run(T, buf.out.as<bf16>(), buf.residual.as<bf16>(), buf.post.as<float>(), buf.comb.as<float>(),
                        buf.new_residual.as<bf16>());
      });
    }
    const std::string head_what = fmt::format("mhc_head (T={})", T);
    if (!ops.hc_head.loaded()) {
      r.missing.push_back(head_what + ": warmup did not load the kernel into the op");
    } else {
      attempt(head_what, [&] {
        ops.hc_head.run({T, buf.residual.as<bf16>(), buf.head_fn.as<float>(), buf.scale.as<float>(),
                         buf.base.as<float>(), buf.out.as<bf16>()});
      });
    }
  }
  if (jit) {
    // Anything fetched during the check was not in memory: warmup missed it.
    const std::vector<jit::CompileEvent> events = jit->events();
    for (size_t i = events_before; i < events.size(); ++i) {
      if (events[i].source != jit::ArtifactSource::Memory) {
        r.missing.push_back(fmt::format("{}: {} during the check, not by warmup", events[i].description,
                                        events[i].source == jit::ArtifactSource::Disk ? "loaded from disk" : "compiled"));
      }
    }
  }
  return r;
}

}  // namespace hcwarm::runtime
