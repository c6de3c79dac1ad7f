#include "backends/cpu/hc_head_cpu.hpp"

#include <atomic>

#include "core/error.hpp"
#include "kernels/cpu/mhc_head.hpp"

namespace hcwarm::cpu {
namespace {

using HeadFn = int (*)(const hcwarm_mhc_head_params*, int64_t, int64_t);

// The library's instantiations: one per hc_mult in [1, 8], the width read at run time.
template <int... HC>
HeadFn pick(int hc, std::integer_sequence<int, HC...>) {
  HeadFn f = nullptr;
  ((hc == HC + 1 ? (f = &hcwarm_kernels::cpu::mhc_head<HC + 1, 0>, 0) : 0), ...);
  return f;
}

}  // namespace

void CpuHcHeadBackend::launch(const hcwarm_mhc_head_params& p, const LaunchContext&) {
  const HeadFn f = pick(p.hc_mult, std::make_integer_sequence<int, 8>{});
  HCWARM_CHECK_ARG(f != nullptr, "hc_head (cpu): hc_mult must be in [1, 8], got {}", p.hc_mult);
  std::atomic<int> rc{hcwarm_mhc::kOk};
  auto body = [&](int64_t b, int64_t e) {
    const int r = f(&p, b, e);
    if (r != hcwarm_mhc::kOk) rc.store(r);
  };
  if (pool_) {
    pool_->parallel_for(p.num_tokens, 4, body);
  } else {
    body(0, p.num_tokens);
  }
  if (rc.load() != hcwarm_mhc::kOk) {
    HCWARM_THROW(ErrorKind::Internal, "hc_head cpu kernel (hc {}, hidden {}) returned error {}", p.hc_mult, p.hidden,
                 rc.load());
  }
}

}  // namespace hcwarm::cpu
