#pragma once
// The CUDA side of mHC pre: launching the kernels of a module (NVRTC
// specialization or the library's generic nvcc fatbin) through the driver API.
#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "backends/cuda/cuda_driver.hpp"
#include "jit/kernel_entry.hpp"
#include "jit/kernel_spec.hpp"
#include "kernels/common/mhc_params.hpp"

namespace hcwarm::mhc {
struct HcPreLaunchPlan;
}

namespace hcwarm::cuda {

// The kernels are __global__ templates of kernels/cuda (mhc_pre_partial_kernel,
// mhc_pre_finish_kernel, mhc_pre_one_pass_kernel), instantiated by name: a
// jit::KernelEntry gives the name expression and the mangled symbol the
// launcher looks up. The entries of one specialization, each in its own part:
// partial 0, finish 1, one-pass 2 (only in one-pass plans: num_splits 1; see
// cuda/mhc_pre_one_pass.cuh), or with the embedding the fn fold 2
// (cuda/mhc_pre_fold.cuh), or with deep_partial the partial kCudaDeepPartialStages
// deep 2 (hcwarm_mhc::cuda_deep_partial_kernels: residual streams) and with one_wave
// the one-wave pair's finish 3 (hcwarm_mhc::cuda_one_wave_kernels: hidden 4096's
// classes 5 and 22; deep_partial too). partial_warps: the partial kernel's block;
// one_pass_threads: the one-pass kernel's (one_pass only).
struct MhcPreEntries {
  jit::KernelEntry partial, finish;
  std::optional<jit::KernelEntry> one_pass;
  std::optional<jit::KernelEntry> fold;
  std::optional<jit::KernelEntry> deep_partial, one_wave_finish;
};
MhcPreEntries mhc_pre_entries(int split_class, int hc, int hidden, bool fused_norm, bool one_pass, bool fast_finish,
                              int input, int partial_warps, int one_pass_threads, bool deep_partial = false,
                              bool one_wave = false);
// Those of the specialization serving a launch plan (mhc_pre_cuda_source's).
MhcPreEntries mhc_pre_entries(const mhc::HcPreLaunchPlan& plan);
// One kernel's entry, its launch bounds given (threads, blocks per SM); stages: the
// partial's residual chunks in flight; streams: the finish's streaming form.
jit::KernelEntry partial_entry(int part, int split_class, int hc, int hidden, int input, int stages, int threads,
                               int min_blocks);
jit::KernelEntry finish_entry(int part, int split_class, int hc, int hidden, bool fused_norm, bool fast, int input,
                              bool streams, int min_blocks);
jit::KernelEntry fold_entry(int part, int hc, int hidden);
// head: the mHC head's form (backends/cuda/hc_head_cuda.hpp); threads: one_pass_threads(hidden).
jit::KernelEntry one_pass_entry(int part, int hc, int hidden, bool fused_norm, bool fast, bool head, int threads);

// Warps per block of the specialized partial kernel (its tile is 16 tokens per warp).
int cuda_partial_warps(int num_splits);
// The split class of num_splits >= 1 (hcwarm_mhc::cuda_split_class: 1, 2, 3, 5 or 22),
// the unit of CUDA specialization; its name in keys and logs: "1", "2", "3-4", "5-21", "22+".
int cuda_split_class(int num_splits);
std::string cuda_split_class_name(int split_class);

// The translation unit of the specialization serving a launch plan (the same
// text for every split count of its class): includes kernels/cuda/mhc_pre_partial.cuh,
// mhc_pre_finish.cuh (and, for a one-pass plan, mhc_pre_one_pass.cuh) and names
// the kernels of mhc_pre_entries, with the plan's block shapes as launch bounds,
// each kernel a part of its own
// (jit/cubin_set.hpp) so that NVRTC compiles them in parallel. It reads the
// plan's choices and makes none.
jit::KernelSource mhc_pre_cuda_source(const mhc::HcPreLaunchPlan& plan);
// The same with the form given explicitly (tests, tools): num_splits' class,
// one_pass (num_splits 1 only, else InvalidArgument), fast_finish: branch-free
// reciprocals in the finish's scalar part. input (hcwarm_mhc::kInput*):
// kInputResidual, the hc streams; kInputEmbed, the first layer's (T, D) embedding as hc
// identical streams; kInputPost, the fused sublayer boundary. Neither of the last
// two with one_pass (InvalidArgument).
jit::KernelSource mhc_pre_cuda_source(int num_splits, int hc, int hidden, bool fused_norm, bool one_pass = false,
                                bool fast_finish = false, int input = hcwarm_mhc::kInputResidual);

// A one-pass kernel ready to launch (prepare_one_pass): hc_pre's, or the head's
// (the same kernel computing the head's gates, backends/cuda/hc_head_cuda).
struct OnePassKernel {
  CUfunction f = nullptr;  // null: not available here (the caller takes another path)
  unsigned threads = 0;
  unsigned smem = 0;  // dynamic shared memory per block, bytes (grid: hcwarm_mhc::kOnePassBlocks)
  int window = hcwarm_mhc::kOnePassWindow;  // hcwarm_mhc::one_pass_window for the hidden size and the device's L2
};

struct MhcPreCudaKernels {
  CUfunction partial = nullptr;
  CUfunction finish = nullptr;
  int partial_warps = hcwarm_mhc::kCudaThreads / 32;  // the partial kernel's block: 16 tokens per warp
  unsigned partial_smem = 0;  // its dynamic shared memory, bytes (set by prepare_partial_smem)
  unsigned partial_smem_post = 0;  // the same with input POST (the previous sublayer's output staged too)
  // The one-pass kernel where the plan took it and the device hosts its grid, or none
  // (the split pair runs). Set up by prepare_one_pass.
  OnePassKernel one_pass;
  // The embedding's fn fold (cuda/mhc_pre_fold.cuh), run first where p.fn_folded is set; null
  // in kernels without it (the partial then folds fn itself: launch_mhc_pre_cuda refuses the pointer).
  CUfunction fold = nullptr;
  // The finish as a programmatic dependent of the partial (sm_90), and the partial of the
  // fold; off in the portable forms.
  bool pdl = true;
  // p.fn_early of every launch (CudaDevice::early_fn): the partial's first fn chunk loads
  // before it waits for the kernel before the call.
  bool early_fn = false;
  // The partial kCudaDeepPartialStages deep (hcwarm_mhc::cuda_deep_partial_kernels) and the
  // one-wave pair's streaming finish (hcwarm_mhc::cuda_one_wave_kernels); null in kernels
  // without them. The deep partial's shared memory is set up by prepare_partial_smem.
  CUfunction deep_partial = nullptr;
  CUfunction one_wave_finish = nullptr;
  unsigned deep_partial_smem = 0;
  // The generic fatbin's kernels (the width read at run time): where their finish splits
  // (hcwarm_mhc::cuda_split_finish).
  bool generic = false;
};

// The kernels a split-pair launch runs (the caller's plan chose them): the class's partial
// and finish; the deep partial with the class's finish (hcwarm_mhc::cuda_deep_partial); or
// the one-wave pair, the deep partial and the streaming finish in a y and a comb block per
// token (hcwarm_mhc::cuda_one_wave).
enum class PairKernels { Class, DeepPartial, OneWave };

// Launcher: queues the kernels on `stream`; returns the first driver error
// (CUDA_SUCCESS otherwise). T == 0 queues nothing.
// stages: bit 0 = partial, bit 1 = finish (benchmarks time them apart).
// With k.one_pass set (the caller's plan took the one-pass kernel), runs it
// instead (launch_one_pass): then only with stages == 3 and residual input,
// else CUDA_ERROR_INVALID_VALUE (1). Every kernel
// needs the pointers misaligned_argument() checks 16-byte aligned.
// Where the driver has cuLaunchKernelEx and k.pdl is set, the finish kernel is a
// programmatic dependent of the partial kernel (it starts while the partial grid drains).
// With p.fn_folded set (input EMBED only, and k.fold), the fold kernel runs before the
// partial stage and the partial is its programmatic dependent in the same way; without it,
// the partial is a programmatic dependent of the kernel before the call (it starts as that
// kernel drains and waits for it before reading anything but, with p.fn_early, fn), and the
// finish lets the kernel after the call start at its own start.
// pair: which kernels, on p.num_parts (refused with CUDA_ERROR_INVALID_VALUE where k lacks them).
CUresult launch_mhc_pre_cuda(const CudaDriver& driver, const MhcPreCudaKernels& k, const hcwarm_mhc_pre_params& p,
                             CUstream stream, int stages = 3, PairKernels pair = PairKernels::Class);

// The mma_smem partial kernel stages the residual in dynamic shared memory
// (hcwarm_mhc::cuda_partial_smem of k.partial_warps; with input POST
// hcwarm_mhc::cuda_partial_smem_post): allows k.partial the larger and records
// both in k.partial_smem / k.partial_smem_post for the launcher; the same for
// k.deep_partial where set (kCudaDeepPartialStages of residual rows).
CUresult prepare_partial_smem(const CudaDriver& driver, MhcPreCudaKernels& k);

// Whether a model's shape can use the one-pass kernel (hc 4, hidden a multiple
// of 1024 up to 7168) on a target: Hopper or datacenter Blackwell (cc 9 or 10:
// its block takes up to 117 KB of shared memory, more than cc 12's 99 KB), with
// at least kOnePassBlocks SMs for its co-resident blocks (num_sms 0: not known,
// no limit; jit/cuda_targets.hpp's matrix says the same).
bool one_pass_supported(int hc_mult, int hidden, int cc_major, int num_sms = 0);
// The split buckets the one-pass kernel serves where it is supported: those of
// at most this many splits (the larger token counts), where its single read of
// the residual beats the split-K pair's two (docs/BENCHMARKS.md, "The one-pass kernel for the larger buckets").
int one_pass_max_splits(int hidden);
// The one-pass block for `hidden`: the TMA warp, 4 mma warps, hidden / 1024 y
// warps, the comb warps and the signal warp (cuda/mhc_pre_one_pass.cuh).
unsigned one_pass_threads(int hidden);
// The workspace the one-pass kernel needs for T tokens: a counter per half of
// each chunk of 128 tokens and a 16 MiB ring of records.
size_t one_pass_workspace_bytes(long long num_tokens);
// The kernels move 16 bytes at a time (and TMA reads the residual): the name of
// the first of residual, fn, y and norm_weight (null: no norm) that is not
// 16-byte aligned, or nullptr when all are.
const char* misaligned_argument(const void* residual, const void* fn, const void* y, const void* norm_weight);
// The same over a launch's params; with input POST also x (post_x), prev_post,
// prev_comb and new_residual (residual_out), named as in mhc::HcPreArgs.
const char* misaligned_argument(const hcwarm_mhc_pre_params& p);
// Gives `f` (a one-pass kernel for `hidden`) its shared memory and checks that
// its hcwarm_mhc::kOnePassBlocks blocks can all be resident on `num_sms` SMs (they
// wait for each other). On success fills k and returns CUDA_SUCCESS; otherwise
// leaves k.f null (the caller falls back to another path): no TMA entry point
// in the driver, too few SMs.
CUresult prepare_one_pass(const CudaDriver& driver, CUfunction f, int hidden, int num_sms, long long l2_bytes,
                          OnePassKernel& k);
// Queues k on `stream` as one cooperative launch: p.partials must hold
// one_pass_workspace_bytes(T); the launcher clears its counters (a memset node
// in a graph), sets p.num_parts and encodes the residual's TMA map itself.
CUresult launch_one_pass(const CudaDriver& driver, const OnePassKernel& k, const hcwarm_mhc_pre_params& p,
                         CUstream stream);

// K-parts of the CUDA partial stage for a split count (see mhc_params.hpp).
inline int cuda_num_parts(int num_splits) { return hcwarm_mhc::cuda_num_parts(num_splits); }

// The generic kernels built ahead of time by nvcc (sm_90a SASS + compute_90 PTX),
// embedded in the library; empty when the library was built without nvcc.
std::span<const std::byte> mhc_pre_generic_fatbin();
// Whether this build carries the generic CUDA kernels (nvcc was found when it was built):
// without them tiered execution is off on CUDA.
inline bool generic_kernels_built() { return !mhc_pre_generic_fatbin().empty(); }
// The SASS targets of the generic fatbins, e.g. "sm_80, sm_90a, sm_100a" ("" without nvcc).
const char* generic_kernel_targets();
// The entry points (explicit instantiations in mhc_pre_generic.cu), by input kind
// (hcwarm_mhc::kInputResidual, kInputEmbed, kInputPost), fused norm and
// fast_finish; the one-pass kernel reads residual streams only, the fold serves the embedding.
// `streaming`: the finish of the buckets of at most 4 splits (hcwarm_mhc::kCudaAnyStreamingClass),
// for residual streams and the embedding.
jit::KernelEntry generic_partial_entry(int input);
jit::KernelEntry generic_finish_entry(int input, bool fused_norm, bool fast, bool streaming = false);
jit::KernelEntry generic_one_pass_entry(bool fused_norm, bool fast);
// The deep partial (residual streams, kCudaDeepPartialStages deep) and the one-wave pair's
// streaming finish of any split count (class 0), in both reciprocal forms.
jit::KernelEntry generic_deep_partial_entry();
jit::KernelEntry generic_one_wave_finish_entry(bool fused_norm, bool fast);
jit::KernelEntry generic_fold_entry();

}  // namespace hcwarm::cuda
