// Uses an installed hcwarm through its three include roots and checks real answers.
// Prints the libhcwarm.so it runs with ("none" when linked statically); exit 1 on a wrong answer.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>

#include <hcwarm/core/embedded_kernels.hpp>  // <hcwarm/...>: include/
#include <hcwarm/mhc/reference.hpp>
#include <hcwarm/mhc/split_policy.hpp>

#include "common/mhc_params.hpp"  // include/hcwarm/kernels
#include "core/error.hpp"         // include/hcwarm

static_assert(hcwarm_mhc::kTokensPerTile == hcwarm::mhc::kTokensPerBlock);

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
}

std::string loaded_libhcwarm() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const auto at = line.find('/');
    if (at != std::string::npos && line.find("/libhcwarm.so", at) != std::string::npos) return line.substr(at);
  }
  return "none";
}

}  // namespace

int main() {
  using namespace hcwarm;
  using namespace hcwarm::mhc;

  // Split policy (tests/mhc/test_split_policy.cpp): dsv4-pro, K = 28672, 132 SMs.
  check(num_splits(1, 28672, 132) == 112, "num_splits(1, 28672, 132) == 112");
  check(num_splits(65, 28672, 132) == 66, "num_splits(65, 28672, 132) == 66");
  check(num_splits(8192, 28672, 132) == 1, "num_splits(8192, 28672, 132) == 1");
  check(representatives(16384, 28672, 132).size() == 22, "22 split buckets for dsv4-pro on an H200");

  // The float64 reference hc_pre on T = 3 tokens, hc = 4 streams, D = 64.
  const int64_t T = 3, hc = 4, D = 64, mix = hc * (2 + hc);
  HostTensor<bf16> residual({T, hc, D});
  for (int64_t i = 0; i < residual.numel(); ++i) residual[i] = bf16::from_float(std::sin(0.37f * i));
  HostTensor<float> fn({mix, hc * D});
  for (int64_t i = 0; i < fn.numel(); ++i) fn[i] = 0.05f * std::cos(0.11f * i);
  HostTensor<float> scale({3}, {0.5f, 0.5f, 0.5f});
  HostTensor<float> base({mix});
  HostTensor<bf16> norm_weight({D});
  for (int64_t i = 0; i < D; ++i) norm_weight[i] = bf16::from_float(1.0f);
  const HcPreResult r = hc_pre_reference(residual, fn, scale, base, &norm_weight, MhcConstants{});
  check(r.y.shape() == Shape({T, D}), "y is (T, D)");
  check(r.post.shape() == Shape({T, hc}), "post is (T, hc)");
  check(r.comb.shape() == Shape({T, hc, hc}), "comb is (T, hc, hc)");
  check(r.norm_fused, "the norm is fused");
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < hc; ++j) {
      double col = 0;
      for (int64_t i = 0; i < hc; ++i) col += r.comb[(t * hc + i) * hc + j];
      check(std::abs(col - 1.0) < 1e-4, "comb columns sum to 1 (Sinkhorn)");
      check(r.post[t * hc + j] > 0.0f && r.post[t * hc + j] < 2.0f, "post in (0, 2)");
    }

  // A bad shape is an hcwarm::Error of kind InvalidArgument, caught across the library boundary.
  try {
    check_hc_pre_shapes(residual, HostTensor<float>({mix, 5}), scale, base, nullptr);
    check(false, "a bad fn shape throws");
  } catch (const Error& e) {
    check(e.kind() == ErrorKind::InvalidArgument, "a bad fn shape is InvalidArgument");
  }

  // The kernel headers travel inside the library, for the JIT.
  bool has_mhc_pre = false;
  for (const EmbeddedFile& f : kernels::embedded_files())
    has_mhc_pre = has_mhc_pre || (f.path == "cuda/mhc_pre.cuh" && !f.content.empty());
  check(has_mhc_pre, "the library embeds kernels/cuda/mhc_pre.cuh");

  std::printf("libhcwarm: %s\n", loaded_libhcwarm().c_str());
  std::printf("%s\n", failures == 0 ? "ok" : "wrong answers");
  return failures == 0 ? 0 : 1;
}
