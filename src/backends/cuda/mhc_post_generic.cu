// The generic CUDA mHC post kernel: the hidden size is a run-time argument
// (hc_mult 4, DeepSeek V4's). Built ahead of time by nvcc (generic.cmake) into a
// fatbin embedded in libhcwarm; it serves hc_post while the specialized kernel
// compiles. 256 threads per block: kCudaPostThreads of hc_post_cuda.hpp.
#include "cuda/mhc_post.cuh"

// The host finds it by generic_post_entry's mangled name (hc_post_cuda.hpp).
template __global__ void hcwarm_post::mhc_post_dyn_kernel<4, 256>(long long, int, const unsigned short*,
                                                                  const unsigned short*, const float*, const float*,
                                                                  unsigned short*);
