#include "model/standin/swiglu_cuda.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/device_upload.hpp"
#include "jit/jit_runtime.hpp"
#include "kernels/standin/gemm_tiles.hpp"

namespace hcwarm::cuda {
namespace {

constexpr int kTile = hcwarm_gemm::kTileM;
constexpr unsigned kThreads = hcwarm_gemm::kThreads;
static_assert(hcwarm_gemm::kTileM == hcwarm_gemm::kTileN, "the launcher sizes both grid axes by one tile");

}  // namespace

CudaSwigluBackend::CudaSwigluBackend(std::shared_ptr<const backends::SwigluWeights> weights, CudaDevice& device,
                                     jit::JitRuntime& jit, int64_t max_tokens)
    : weights_(std::move(weights)), device_(device), jit_(jit) {
  weights_->validate();
  HCWARM_CHECK_ARG(max_tokens >= 1, "swiglu_mlp: max_tokens must be >= 1, got {}", max_tokens);
  hidden_act_ = DeviceBuffer(device_, static_cast<size_t>(max_tokens) * weights_->width * sizeof(bf16));
  gate_up_ = DeviceBuffer(device_, static_cast<size_t>(max_tokens) * 2 * weights_->width * sizeof(float));
  gate_ = upload_to_device(weights_->gate, device_);
  up_ = upload_to_device(weights_->up, device_);
  down_ = upload_to_device(weights_->down, device_);
}

CudaSwigluBackend::SwigluEntries CudaSwigluBackend::kernel_entries(int hidden, int width) {
  // The parameter lists as mangled in namespace hcwarm_gemm: (int t, int k_per_split, const unsigned short* x,
  // const unsigned short* gate, const unsigned short* up, float* c32), (long long count, const float* c32,
  // unsigned short* h) and (int t, const unsigned short* h, const unsigned short* down, unsigned short* out).
  auto entry = [](const char* name, const std::vector<jit::KernelTemplateArg>& args, const char* params) {
    return jit::kernel_entry(0, {"hcwarm_gemm"}, name, args, params);
  };
  return {entry("swiglu_gate_up_kernel", {hidden, width}, "iiPKtS2_S2_Pf"),
          entry("swiglu_act_kernel", {width}, "xPKfPt"), entry("swiglu_down_kernel", {hidden, width}, "iPKtS2_Pt")};
}

jit::KernelSpec CudaSwigluBackend::kernel_spec(int hidden, int width, const std::string& arch) {
  jit::KernelSpec s;
  s.family = "swiglu_mlp";
  s.params = {{"hidden", std::to_string(hidden)}, {"width", std::to_string(width)}};
  s.target = jit::TargetKind::Cuda;
  s.arch = arch;
  const SwigluEntries e = kernel_entries(hidden, width);
  s.source = fmt::format("// swiglu_mlp CUDA: hidden={} width={}\n#include \"standin/gemm_nt.cuh\"\n", hidden, width);
  s.entries = {e.gate_up, e.act, e.down};
  return s;
}

void CudaSwigluBackend::forward(const bf16* x, bf16* out, int64_t T, Device& device) {
  HCWARM_CHECK_ARG(&device == &device_, "swiglu_mlp: called with a device other than its own");
  if (T == 0) return;
  const int hidden = weights_->hidden;
  const int width = weights_->width;
  std::call_once(module_once_, [&] {
    module_ = jit_.get(kernel_spec(hidden, width, device_.arch()));
    const SwigluEntries e = kernel_entries(hidden, width);
    gate_up_fn_ = static_cast<CUfunction>(module_->function(e.gate_up.symbol));
    act_fn_ = static_cast<CUfunction>(module_->function(e.act.symbol));
    down_fn_ = static_cast<CUfunction>(module_->function(e.down.symbol));
  });
  HCWARM_CHECK_ARG(static_cast<size_t>(T) * width * sizeof(bf16) <= hidden_act_.bytes(),
                   "swiglu_mlp: {} tokens exceed the {} it was built for", T,
                   hidden_act_.bytes() / (width * sizeof(bf16)));

  const CudaDriver& drv = device_.driver();
  const CUstream stream = device_.stream();
  int t = static_cast<int>(T);
  const unsigned tiles_m = static_cast<unsigned>((T + kTile - 1) / kTile);
  const unsigned tiles_n = static_cast<unsigned>((width + kTile - 1) / kTile);
  // Split K so that about two blocks per multiprocessor run even for one token.
  constexpr int kTileK = hcwarm_gemm::kTileK;
  const int k_tiles = (hidden + kTileK - 1) / kTileK;
  const int want = std::max(1, static_cast<int>((2 * device_.num_sms() + tiles_m * tiles_n - 1) / (tiles_m * tiles_n)));
  const int splits = std::min(k_tiles, want);
  int k_per_split = (k_tiles + splits - 1) / splits * kTileK;
  const unsigned grid_z = static_cast<unsigned>((hidden + k_per_split - 1) / k_per_split);

  HCWARM_CHECK_CU(drv, drv.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(gate_up_.get()), 0,
                                           static_cast<size_t>(T) * 2 * width * sizeof(float), stream));
  const void* xp = x;
  const void* gp = gate_.get();
  const void* upp = up_.get();
  void* c32 = gate_up_.get();
  void* gate_up_params[] = {&t, &k_per_split, &xp, &gp, &upp, &c32};
  HCWARM_CHECK_CU(drv, drv.cuLaunchKernel(gate_up_fn_, tiles_n,
                                          tiles_m, grid_z, kThreads, 1, 1, 0, stream, gate_up_params, nullptr));
  long long count = T * width;
  void* hp = hidden_act_.get();
  void* act_params[] = {&count, &c32, &hp};
  HCWARM_CHECK_CU(drv, drv.cuLaunchKernel(act_fn_,
                                          static_cast<unsigned>((count + kThreads - 1) / kThreads), 1, 1, kThreads, 1, 1, 0, stream,
                                          act_params, nullptr));
  const void* hcp = hidden_act_.get();
  const void* dp = down_.get();
  void* op = out;
  void* down_params[] = {&t, &hcp, &dp, &op};
  HCWARM_CHECK_CU(drv, drv.cuLaunchKernel(down_fn_,
                                          (hidden + kTile - 1) / kTile, tiles_m, 1, kThreads, 1, 1, 0, stream, down_params,
                                          nullptr));
}

}  // namespace hcwarm::cuda
