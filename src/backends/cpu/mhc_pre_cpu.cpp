#include "backends/cpu/mhc_pre_cpu.hpp"

#include <atomic>

#include "core/error.hpp"
#include "kernels/cpu/mhc_pre.hpp"

namespace hcwarm::cpu {
namespace {

int generic_partial(const hcwarm_mhc_pre_params* p, long long b, long long e) {
  return hcwarm_kernels::cpu::mhc_pre_partial<0, 4, 0, hcwarm_mhc::kInputRuntime>(p, b, e);
}
int generic_finish_plain(const hcwarm_mhc_pre_params* p, long long b, long long e) {
  return hcwarm_kernels::cpu::mhc_pre_finish<0, 4, 0, false, hcwarm_mhc::kInputRuntime>(p, b, e);
}
int generic_finish_norm(const hcwarm_mhc_pre_params* p, long long b, long long e) {
  return hcwarm_kernels::cpu::mhc_pre_finish<0, 4, 0, true, hcwarm_mhc::kInputRuntime>(p, b, e);
}

}  // namespace

MhcPreHostKernels mhc_pre_generic_host_kernels(int hc_mult, bool fused_norm) {
  if (hc_mult != 4) {
    HCWARM_THROW(ErrorKind::Unavailable, "the generic CPU mhc_pre kernels are built for hc_mult 4, not {}", hc_mult);
  }
  return MhcPreHostKernels{generic_partial, fused_norm ? generic_finish_norm : generic_finish_plain};
}

int launch_mhc_pre_host(const MhcPreHostKernels& k, const hcwarm_mhc_pre_params& p, ThreadPool& pool, int stages) {
  if (p.num_tokens <= 0) return hcwarm_mhc::kOk;
  const int64_t tb = (p.num_tokens + hcwarm_kernels::cpu::kTokenBlock - 1) / hcwarm_kernels::cpu::kTokenBlock;
  const int64_t items = tb * p.num_splits;
  std::atomic<int> rc{hcwarm_mhc::kOk};
  // Stage (a): about 4 chunks per thread, at least one item each.
  const int64_t threads = pool.size();
  const int64_t grain_a = std::max<int64_t>(1, items / (4 * threads));
  if (stages & 1) pool.parallel_for(items, grain_a, [&](int64_t b, int64_t e) {
    const int r = k.partial(&p, b, e);
    if (r != hcwarm_mhc::kOk) rc.store(r);
  });
  if (rc.load() != hcwarm_mhc::kOk) return rc.load();
  const int64_t grain_b = std::max<int64_t>(1, p.num_tokens / (4 * threads));
  if (stages & 2) pool.parallel_for(p.num_tokens, grain_b, [&](int64_t b, int64_t e) {
    const int r = k.finish(&p, b, e);
    if (r != hcwarm_mhc::kOk) rc.store(r);
  });
  return rc.load();
}

}  // namespace hcwarm::cpu
