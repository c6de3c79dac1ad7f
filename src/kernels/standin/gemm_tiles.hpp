#pragma once
// The stand-in GEMM's tiles (standin/gemm_nt.cuh), shared with the launcher
// that sizes its grid (model/standin/swiglu_cuda.cpp). Plain C++: compiled by
// NVRTC and the host compiler alike.

namespace hcwarm_gemm {

constexpr int kTileM = 64;
constexpr int kTileN = 64;
constexpr int kTileK = 32;
constexpr int kThreads = 256;  // 16 x 16 threads, 4 x 4 outputs each

}  // namespace hcwarm_gemm
