// The generic CUDA mHC post kernel: the hidden size is a run-time argument
// (hc_mult 4, DeepSeek V4's). Built ahead of time by nvcc (generic.cmake) into a
// fatbin embedded in libhcwarm; it serves hc_post while the specialized kernel
// compiles. 256 threads per block: kCudaPostThreads of hc_post_cuda.hpp.
#include "cuda/mhc_post.cuh"

extern "C" __global__ void __launch_bounds__(256)
    hcwarm_mhc_post_generic(long long t, int hidden, const unsigned short* out, const unsigned short* r_in,
                            const float* post, const float* comb, unsigned short* r_out) {
  hcwarm_post::mhc_post_dyn<4>(t, hidden, out, r_in, post, comb, r_out);
}
