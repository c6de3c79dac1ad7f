#!/usr/bin/env bash
# Builds the one-pass experiment (one_pass_l2.cu) once per L2-traffic variant of
# the kernel, each against its own edited copy of src/kernels (the production
# headers carry no experiment hooks): build/experiments/one_pass_l2.VARIANT.
#   base          the kernel as shipped (the window, chunks of TMA ahead of y: WINDOW=N at run time)
#   disc          each comb warp drops its token's records from L2 once they are in
#                 registers (discard.global.L2, 128-byte lines), so the ring never
#                 costs a write-back, and fences before its comb_done
#   disc_nofence  the same without the fence (not ordered before the slot's rewrite)
#   yef           y stored with an L2 evict_first hint (written once, never re-read)
# Usage: bench/experiments/one_pass_variants.sh [VARIANT...]   (default: all)
# On the GPU machine: [WINDOW=N] FAST=1 build/experiments/one_pass_l2.VARIANT T HIDDEN (see one_pass_l2.cu);
# the figures: docs/BENCHMARKS.md, "What bounds hc_pre".
set -eu
cd "$(dirname "$0")"
variants=${*:-"base disc disc_nofence yef"}
mkdir -p ../../build/experiments
# replace FILE OLD NEW: exact text, which must occur once.
replace() {
  python3 - "$@" <<'PY'
import sys
path, old, new = sys.argv[1:4]
s = open(path).read()
if s.count(old) != 1:
    sys.exit(f"one_pass_variants.sh: {old!r} occurs {s.count(old)} times in {path}")
open(path, "w").write(s.replace(old, new))
PY
}
for v in $variants; do
  tmp=$(mktemp -d)
  cp -r ../../src/kernels/. "$tmp/"
  gates=$tmp/cuda/mhc_pre_one_pass_gates.cuh
  ptx=$tmp/cuda/ptx/memory.cuh
  case "$v" in
    base) ;;
    disc|disc_nofence)
      cat >>"$ptx" <<'CUH'
namespace hcwarm_kernels {
namespace cuda {
__device__ __forceinline__ void discard_l2_line(const void* p) { asm volatile("discard.global.L2 [%0], 128;" ::"l"(p) : "memory"); }
__device__ __forceinline__ void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
}  // namespace cuda
}  // namespace hcwarm_kernels
CUH
      replace "$gates" '  float v[kValues], vn[kValues];' '  const bool discard = (reinterpret_cast<unsigned long long>(rec) & 127u) == 0;
  float v[kValues], vn[kValues];'
      replace "$gates" '    for (int e = 0; e < kValues; ++e) scr[lane * kValues + e] = v[e];' '    for (int e = 0; e < kValues; ++e) scr[lane * kValues + e] = v[e];
    if (discard) {
      const float* rr = rec + ((size_t)(c % kRing) * kChunk + b) * kParts * kRec;
      discard_l2_line(rr + lane * kRec);
      discard_l2_line(rr + (lane + 32) * kRec);
    }'
      [ "$v" = disc_nofence ] || replace "$gates" '    if (lane == 0) comb_done[k] = c / kCombWarps + 1;' '    if (discard) fence_acq_rel_gpu();
    __syncwarp();
    if (lane == 0) comb_done[k] = c / kCombWarps + 1;'
      ;;
    yef)
      cat >>"$ptx" <<'CUH'
namespace hcwarm_kernels {
namespace cuda {
__device__ __forceinline__ void stg_u4_stream(void* p, U4 v) {
  asm volatile("{ .reg .b64 pol; createpolicy.fractional.L2::evict_first.b64 pol, 1.0;\n"
               "st.global.L2::cache_hint.v4.u32 [%0], {%1,%2,%3,%4}, pol; }" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w) : "memory");
}
}  // namespace cuda
}  // namespace hcwarm_kernels
CUH
      replace "$gates" 'stg_u4(y + idx * 8,' 'stg_u4_stream(y + idx * 8,'
      ;;
    *) echo "$0: no variant $v (base disc disc_nofence yef)" >&2; exit 2 ;;
  esac
  /usr/local/cuda/bin/nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -I"$tmp" -cudart static \
    -o "../../build/experiments/one_pass_l2.$v" one_pass_l2.cu
  rm -rf "$tmp"
  echo "built build/experiments/one_pass_l2.$v"
done
