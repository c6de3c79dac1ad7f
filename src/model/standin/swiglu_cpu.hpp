#pragma once
// The CPU backend of the stand-in SwiGLU MLP: threads over tokens on `pool`
// (shared, so many layers need not each own threads). The intermediate
// silu(g) * u is rounded to bf16 before down_proj, as a bf16 model's activations are.
#include <memory>

#include "model/standin/swiglu_backend.hpp"
#include "core/thread_pool.hpp"

namespace hcwarm::cpu {

std::unique_ptr<backends::SwigluBackend> make_cpu_swiglu_backend(std::shared_ptr<const backends::SwigluWeights> weights,
                                                                 std::shared_ptr<ThreadPool> pool);

}  // namespace hcwarm::cpu
