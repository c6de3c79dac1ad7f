#include "backends/cuda/mhc_pre_cuda.hpp"

#include <algorithm>
#include <cstdint>

#include "jit/cuda_targets.hpp"

namespace hcwarm::cuda {
namespace {

constexpr CUresult kInvalidValue = 1;  // CUDA_ERROR_INVALID_VALUE (cuda.h)

// hidden a positive multiple of 1024 up to 7168: whole 64-column TMA boxes in
// each of the 64 K-parts, and one y warp per 1024 columns (at most 7: the block
// is then 15 warps, which leaves at most 136 registers a thread).
bool one_pass_hidden(int hidden) {
  return hidden > 0 && hidden % hcwarm_mhc::kOnePassHiddenStep == 0 && hidden <= hcwarm_mhc::kOnePassMaxHidden;
}

// The one-pass kernel's view of the residual: T rows of hc * hidden bf16
// columns, read in 64 x 64 boxes with the 128-byte swizzle.
CUresult encode_residual_map(const CudaDriver& d, const hcwarm_mhc_pre_params& p, hcwarm_tensor_map& map) {
  const unsigned long long cols = static_cast<unsigned long long>(p.hc_mult) * static_cast<unsigned long long>(p.hidden);
  const unsigned long long dims[2] = {cols, static_cast<unsigned long long>(p.num_tokens)};
  const unsigned long long strides[1] = {cols * 2};
  const unsigned box[2] = {hcwarm_mhc::kOnePassBox, hcwarm_mhc::kOnePassBox};
  const unsigned element_strides[2] = {1, 1};
  return d.cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<unsigned short*>(p.residual),
                                  dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                  CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

}  // namespace

CUresult prepare_partial_smem(const CudaDriver& d, MhcPreCudaKernels& k) {
  const unsigned bytes = hcwarm_mhc::cuda_partial_smem(k.partial_warps);
  const unsigned post_bytes = hcwarm_mhc::cuda_partial_smem_post(k.partial_warps);
  // Above the 48 KB default only with the attribute (every driver since CUDA 9 has it).
  // The attribute is a ceiling: residual launches still ask for `bytes` only.
  if (d.cuFuncSetAttribute == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  const CUresult rc =
      d.cuFuncSetAttribute(k.partial, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(post_bytes));
  if (rc != CUDA_SUCCESS) return rc;
  k.partial_smem = bytes;
  k.partial_smem_post = post_bytes;
  if (k.deep_partial == nullptr) return CUDA_SUCCESS;
  const unsigned deep = hcwarm_mhc::cuda_partial_smem_stages(k.partial_warps, hcwarm_mhc::kCudaDeepPartialStages);
  const CUresult deep_rc =
      d.cuFuncSetAttribute(k.deep_partial, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(deep));
  if (deep_rc == CUDA_SUCCESS) k.deep_partial_smem = deep;
  return deep_rc;
}

const char* generic_kernel_targets() {
#ifdef HCWARM_GENERIC_CUDA_TARGETS
  return HCWARM_GENERIC_CUDA_TARGETS;  // generic.cmake: the targets its nvcc built
#else
  return "";
#endif
}

bool one_pass_supported(int hc_mult, int hidden, int cc_major, int num_sms) {
  const bool big_smem = jit::cuda_large_smem_target(cc_major);
  const bool enough_sms = num_sms <= 0 || num_sms >= hcwarm_mhc::kOnePassBlocks;
  return big_smem && enough_sms && hc_mult == 4 && one_pass_hidden(hidden);
}

int one_pass_max_splits(int hidden) {
  // The H200's crossovers (docs/BENCHMARKS.md, "The one-pass kernel for the
  // larger buckets" and "Against upstream and the targets"): hidden 7168
  // from 448 tokens (18 splits on 132 SMs), 4096 from 513 (14). The one-pass
  // kernel's per-chunk latency barely grows with the width, the split pair's
  // time does. Other widths take 4096's.
  return hidden >= 7168 ? 21 : 14;
}

unsigned one_pass_threads(int hidden) { return static_cast<unsigned>(hcwarm_mhc::one_pass_threads(hidden)); }

size_t one_pass_workspace_bytes(long long num_tokens) {
  return hcwarm_mhc::one_pass_workspace_bytes(static_cast<size_t>(std::max(num_tokens, 0LL)));
}

const char* misaligned_argument(const void* residual, const void* fn, const void* y, const void* norm_weight) {
  const std::pair<const char*, const void*> args[] = {
      {"residual", residual}, {"fn", fn}, {"y", y}, {"norm_weight", norm_weight}};
  for (const auto& [name, ptr] : args) {
    if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0) return name;  // a null norm_weight passes
  }
  return nullptr;
}

const char* misaligned_argument(const hcwarm_mhc_pre_params& p) {
  if (const char* bad = misaligned_argument(p.residual, p.fn, p.y, p.norm_weight)) return bad;
  if (p.input != hcwarm_mhc::kInputPost) return nullptr;
  const std::pair<const char*, const void*> args[] = {
      {"x", p.post_x}, {"prev_post", p.prev_post}, {"prev_comb", p.prev_comb}, {"new_residual", p.residual_out}};
  for (const auto& [name, ptr] : args) {
    if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0) return name;
  }
  return nullptr;
}

CUresult prepare_one_pass(const CudaDriver& d, CUfunction f, int hidden, int num_sms, long long l2_bytes,
                          OnePassKernel& k) {
  k = OnePassKernel{};
  if (d.cuLaunchKernelEx == nullptr || d.cuFuncSetAttribute == nullptr || d.cuTensorMapEncodeTiled == nullptr ||
      d.cuOccupancyMaxActiveBlocksPerMultiprocessor == nullptr || f == nullptr || !one_pass_hidden(hidden)) {
    return CUDA_SUCCESS;  // not available here: the two-kernel path
  }
  const unsigned threads = one_pass_threads(hidden);
  const unsigned smem = hcwarm_mhc::one_pass_smem(static_cast<unsigned>(hidden));
  CUresult rc = d.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(smem));
  if (rc != CUDA_SUCCESS) return rc;
  int per_sm = 0;
  rc = d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, static_cast<int>(threads), smem);
  if (rc != CUDA_SUCCESS) return rc;
  // Every block of the grid must be resident at once (they wait for each other).
  if (per_sm * num_sms < hcwarm_mhc::kOnePassBlocks) return CUDA_SUCCESS;
  k = OnePassKernel{f, threads, smem, hcwarm_mhc::one_pass_window(hidden, l2_bytes)};
  return CUDA_SUCCESS;
}

CUresult launch_one_pass(const CudaDriver& d, const OnePassKernel& k, const hcwarm_mhc_pre_params& p,
                         CUstream stream) {
  if (p.num_tokens <= 0) return CUDA_SUCCESS;
  hcwarm_mhc_pre_params params = p;
  params.num_parts = hcwarm_mhc::kOnePassParts;
  params.one_pass_window = k.window;
  // The chunks' counters start at zero (p.partials: hcwarm_mhc::one_pass_workspace_bytes).
  CUresult rc = d.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(p.partials), 0,
                                  hcwarm_mhc::one_pass_counter_bytes(static_cast<size_t>(p.num_tokens)), stream);
  if (rc != CUDA_SUCCESS) return rc;
  hcwarm_tensor_map map;
  rc = encode_residual_map(d, params, map);
  if (rc != CUDA_SUCCESS) return rc;
  void* args[] = {&params, &map};
  CUlaunchAttribute coop;
  coop.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  coop.value.cooperative = 1;
  CUlaunchConfig c;
  c.gridDimX = hcwarm_mhc::kOnePassBlocks;
  c.blockDimX = k.threads;
  c.sharedMemBytes = k.smem;
  c.hStream = stream;
  c.attrs = &coop;
  c.numAttrs = 1;
  return d.cuLaunchKernelEx(&c, k.f, args, nullptr);
}

CUresult launch_mhc_pre_cuda(const CudaDriver& d, const MhcPreCudaKernels& k, const hcwarm_mhc_pre_params& p,
                             CUstream stream, int stages, PairKernels pair) {
  if (p.num_tokens <= 0) return CUDA_SUCCESS;
  hcwarm_mhc_pre_params params = p;
  void* args[] = {&params};
  // Set only where the caller's plan took the one-pass kernel; it runs both stages
  // and reads residual streams only (a guard, not a choice).
  if (k.one_pass.f != nullptr) {
    if (stages != 3 || p.input != hcwarm_mhc::kInputResidual) return kInvalidValue;
    return launch_one_pass(d, k.one_pass, p, stream);
  }
  // The folded fn is the partial stage's input: only with it, and only for the embedding.
  const bool fold = p.fn_folded != nullptr;
  if (fold && (k.fold == nullptr || p.input != hcwarm_mhc::kInputEmbed)) return kInvalidValue;
  const bool deep = pair != PairKernels::Class;
  const bool one_wave = pair == PairKernels::OneWave;
  if ((deep && (k.deep_partial == nullptr || p.input != hcwarm_mhc::kInputResidual)) ||
      (one_wave && k.one_wave_finish == nullptr)) {
    return kInvalidValue;
  }
  const bool pdl = k.pdl && d.cuLaunchKernelEx != nullptr;
  // A launch of f on `stream`, as a programmatic dependent of the kernel before it where `dependent`.
  const auto launch = [&](CUfunction f, unsigned gx, unsigned gy, unsigned threads, unsigned smem, bool dependent) {
    if (!dependent) return d.cuLaunchKernel(f, gx, gy, 1, threads, 1, 1, smem, stream, args, nullptr);
    CUlaunchAttribute attr;
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig c;
    c.gridDimX = gx;
    c.gridDimY = gy;
    c.blockDimX = threads;
    c.sharedMemBytes = smem;
    c.hStream = stream;
    c.attrs = &attr;
    c.numAttrs = 1;
    return d.cuLaunchKernelEx(&c, f, args, nullptr);
  };
  const long long tile_tokens = 16LL * k.partial_warps;
  const unsigned tiles = static_cast<unsigned>((p.num_tokens + tile_tokens - 1) / tile_tokens);
  if (stages & 1) {
    if (fold) {
      const unsigned quads = static_cast<unsigned>(hcwarm_mhc::fold_quads(p.hc_mult, p.hidden));
      const unsigned threads = hcwarm_mhc::kCudaFoldThreads;
      const CUresult rc = launch(k.fold, (quads + threads - 1) / threads, 1, threads, 0, false);
      if (rc != CUDA_SUCCESS) return rc;
    }
    const unsigned smem = deep                                    ? k.deep_partial_smem
                          : p.input == hcwarm_mhc::kInputPost ? k.partial_smem_post
                                                              : k.partial_smem;
    const CUresult rc = launch(deep ? k.deep_partial : k.partial, static_cast<unsigned>(p.num_parts), tiles,
                               32u * static_cast<unsigned>(k.partial_warps), smem, pdl);
    if (rc != CUDA_SUCCESS) return rc;
  }
  if (!(stages & 2)) return CUDA_SUCCESS;
  // Decode sizes and the one-wave pair: a Y and a Comb block per token (FinishRole), which
  // the kernel reads off the grid.
  const bool split_finish =
      one_wave || hcwarm_mhc::cuda_split_finish(p.num_splits, p.hidden, p.input, p.num_tokens, k.generic);
  const unsigned blocks = static_cast<unsigned>(p.num_tokens) * (split_finish ? 2u : 1u);
  return launch(one_wave ? k.one_wave_finish : k.finish, blocks, 1, hcwarm_mhc::kCudaThreads, 0, pdl && (stages & 1));
}

}  // namespace hcwarm::cuda
