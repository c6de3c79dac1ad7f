#include "backends/cuda/swiglu_cuda.hpp"

#include <fmt/format.h>

#include "jit/jit_runtime.hpp"

namespace hcwarm::cuda {
namespace {

DeviceBuffer upload(const HostTensor<bf16>& t, Device& device) {
  DeviceBuffer b(device, static_cast<size_t>(t.numel()) * sizeof(bf16));
  device.copy_from_host(b.get(), t.data(), b.bytes());
  return b;
}

constexpr int kTile = 64;  // kTileM == kTileN in cuda/gemm_nt.cuh

}  // namespace

CudaSwigluBackend::CudaSwigluBackend(std::shared_ptr<const model::SwigluWeights> weights, CudaDevice& device,
                                     jit::JitRuntime& jit, int64_t max_tokens)
    : weights_(std::move(weights)), device_(device), jit_(jit) {
  weights_->validate();
  HCWARM_CHECK_ARG(max_tokens >= 1, "swiglu_mlp: max_tokens must be >= 1, got {}", max_tokens);
  hidden_act_ = DeviceBuffer(device_, static_cast<size_t>(max_tokens) * weights_->width * sizeof(bf16));
  gate_ = upload(weights_->gate, device_);
  up_ = upload(weights_->up, device_);
  down_ = upload(weights_->down, device_);
}

jit::KernelSpec CudaSwigluBackend::kernel_spec(int hidden, int width, const std::string& arch) {
  jit::KernelSpec s;
  s.family = "swiglu_mlp";
  s.params = {{"hidden", std::to_string(hidden)}, {"width", std::to_string(width)}};
  s.target = jit::TargetKind::Cuda;
  s.arch = arch;
  s.source = fmt::format(
      "#include \"cuda/gemm_nt.cuh\"\n"
      "// hidden={} width={}\n"
      "extern \"C\" __global__ void __launch_bounds__(256) hcwarm_swiglu_up(int t, const unsigned short* x,\n"
      "    const unsigned short* gate, const unsigned short* up, unsigned short* h) {{\n"
      "  hcwarm_gemm::gemm_nt<true>(t, {}, {}, x, gate, up, h);\n"
      "}}\n"
      "extern \"C\" __global__ void __launch_bounds__(256) hcwarm_swiglu_down(int t, const unsigned short* h,\n"
      "    const unsigned short* down, unsigned short* out) {{\n"
      "  hcwarm_gemm::gemm_nt<false>(t, {}, {}, h, down, nullptr, out);\n"
      "}}\n",
      hidden, width, width, hidden, hidden, width);
  return s;
}

void CudaSwigluBackend::forward(const bf16* x, bf16* out, int64_t T, Device& device) {
  HCWARM_CHECK_ARG(&device == &device_, "swiglu_mlp: called with a device other than its own");
  if (T == 0) return;
  const int hidden = weights_->hidden;
  const int width = weights_->width;
  std::call_once(module_once_, [&] { module_ = jit_.get(kernel_spec(hidden, width, device_.arch())); });
  HCWARM_CHECK_ARG(static_cast<size_t>(T) * width * sizeof(bf16) <= hidden_act_.bytes(),
                   "swiglu_mlp: {} tokens exceed the {} it was built for", T,
                   hidden_act_.bytes() / (width * sizeof(bf16)));

  const CudaDriver& drv = device_.driver();
  int t = static_cast<int>(T);
  const void* xp = x;
  const void* gp = gate_.get();
  const void* upp = up_.get();
  void* hp = hidden_act_.get();
  void* up_params[] = {&t, &xp, &gp, &upp, &hp};
  auto up_fn = static_cast<CUfunction>(module_->function("hcwarm_swiglu_up"));
  HCWARM_CHECK_CU(drv, drv.cuLaunchKernel(up_fn, (width + kTile - 1) / kTile, static_cast<unsigned>((T + kTile - 1) / kTile),
                                          1, 256, 1, 1, 0, device_.stream(), up_params, nullptr));
  const void* hcp = hidden_act_.get();
  const void* dp = down_.get();
  void* op = out;
  void* down_params[] = {&t, &hcp, &dp, &op};
  auto down_fn = static_cast<CUfunction>(module_->function("hcwarm_swiglu_down"));
  HCWARM_CHECK_CU(drv, drv.cuLaunchKernel(down_fn, (hidden + kTile - 1) / kTile,
                                          static_cast<unsigned>((T + kTile - 1) / kTile), 1, 256, 1, 1, 0,
                                          device_.stream(), down_params, nullptr));
}

}  // namespace hcwarm::cuda
