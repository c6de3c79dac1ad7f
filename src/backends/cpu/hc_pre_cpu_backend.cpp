#include "backends/cpu/hc_pre_cpu_backend.hpp"

#include "backends/cpu/mhc_pre_cpu.hpp"
#include "core/error.hpp"

namespace hcwarm::cpu {
namespace {

struct CpuKernels final : backends::HcPreKernels {
  MhcPreHostKernels host;
};

}  // namespace

CpuHcPreBackend::CpuHcPreBackend(int hc_mult, std::shared_ptr<ThreadPool> pool)
    : hc_mult_(hc_mult), pool_(std::move(pool)) {
  HCWARM_ASSERT(pool_ != nullptr, "the cpu backend needs a thread pool");
}

std::unique_ptr<backends::HcPreKernels> CpuHcPreBackend::bind(std::shared_ptr<const jit::LoadedModule> module,
                                                              const jit::KernelSpec&, int) {
  auto k = std::make_unique<CpuKernels>();
  using AbiFn = int (*)();
  const int abi = reinterpret_cast<AbiFn>(module->function(kCpuAbiSymbol))();
  HCWARM_ASSERT(abi == hcwarm_mhc::kPreAbi, "host kernel ABI {} != {}", abi, hcwarm_mhc::kPreAbi);
  k->host.partial = reinterpret_cast<MhcPreHostFn>(module->function(kCpuPartialSymbol));
  k->host.finish = reinterpret_cast<MhcPreHostFn>(module->function(kCpuFinishSymbol));
  k->module = std::move(module);
  return k;
}

std::unique_ptr<backends::HcPreKernels> CpuHcPreBackend::bind_generic(bool fused_norm) {
  auto k = std::make_unique<CpuKernels>();
  k->host = mhc_pre_generic_host_kernels(hc_mult_, fused_norm);
  return k;
}

size_t CpuHcPreBackend::workspace_bytes(int64_t num_tokens, int num_splits) const {
  return static_cast<size_t>(num_tokens) * num_splits * hcwarm_mhc::kPartialStride * sizeof(float);
}

void CpuHcPreBackend::launch(const backends::HcPreKernels& kernels, hcwarm_mhc_pre_params p, const LaunchContext&,
                             int stages) {
  p.num_parts = p.num_splits;
  const int rc = launch_mhc_pre_host(static_cast<const CpuKernels&>(kernels).host, p, *pool_, stages);
  if (rc != hcwarm_mhc::kOk) {
    HCWARM_THROW(ErrorKind::Internal, "mhc_pre cpu kernel (num_splits {}) returned error {}", p.num_splits, rc);
  }
}

}  // namespace hcwarm::cpu
