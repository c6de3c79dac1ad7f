#pragma once
// Proof that warmup covered the whole mHC family: after warmup, with compiling
// switched off, every op (hc_pre from residual streams, hc_pre from the first
// layer's embedding, the fused sublayer boundary hc_post_pre, hc_post, hc_head)
// runs once at one token count of every split bucket of [1, max_num_tokens].
// A kernel that warmup did not load into its op, a call refused or failing, and
// any kernel the JIT had to fetch from disk (or would have compiled) during the
// check are misses, each named.
#include <cstdint>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "jit/jit_runtime.hpp"
#include "mhc/hc_head_op.hpp"
#include "mhc/hc_post_op.hpp"
#include "mhc/hc_pre_op.hpp"

namespace hcwarm::runtime {

struct CoverageOps {
  mhc::HcPreOp& hc_pre;
  mhc::HcPostOp& hc_post;
  mhc::HcHeadOp& hc_head;
};

struct CoverageReport {
  int calls = 0;                     // op calls the check made
  std::vector<int64_t> token_counts;  // one per split bucket (its smallest T)
  std::vector<std::string> missing;  // "<kernel>: <why>", empty when warmup covered everything
  bool ok() const { return missing.empty(); }
};

// fused_norm: hc_pre calls with a norm weight (as DeepSeek V4's layers make them).
// jit may be null (no JIT: nothing to miss but failing calls). Leaves the JIT's
// compile switch as it found it.
CoverageReport check_kernel_coverage(const CoverageOps& ops, Device& device, jit::JitRuntime* jit,
                                     int64_t max_num_tokens, bool fused_norm = true);

}  // namespace hcwarm::runtime
