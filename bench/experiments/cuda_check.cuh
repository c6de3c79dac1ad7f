#pragma once
// The experiments' one check of a CUDA runtime call: where it failed, the call, and the
// runtime's error, then exit(1) (a study stops at its first failure).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x)                                                                             \
  do {                                                                                    \
    const cudaError_t ck_error_ = (x);                                                    \
    if (ck_error_ != cudaSuccess) {                                                       \
      std::printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(ck_error_)); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)
