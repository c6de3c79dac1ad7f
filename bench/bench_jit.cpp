// JIT runtime costs on this machine: compile time per key (host compiler and
// NVRTC sm_90a, no GPU needed), load time of a key from the disk cache, and a
// memory hit. Each compile benchmark compiles a new key per iteration.
//
//   build/bench/bench_jit --benchmark_filter=. [--benchmark_min_time=...]
//
// "tiny" kernels are a few lines (compiler start-up cost); "mhc_pre" instantiates
// the project's mHC pre kernels (src/kernels, one split bucket) and is skipped
// when those headers do not compile.
#include <benchmark/benchmark.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <filesystem>

#include "core/embedded_kernels.hpp"
#include "jit/jit_runtime.hpp"
#include "jit/fs_util.hpp"

namespace {
using namespace hcwarm;
using namespace hcwarm::jit;

std::atomic<int> g_unique{0};

KernelSpec tiny_host(int v) {
  return {"bench_tiny", {{"v", std::to_string(v)}},
          "extern \"C\" int answer() { return " + std::to_string(v) + "; }\n", TargetKind::Host, ""};
}
KernelSpec tiny_cuda(int v) {
  return {"bench_tiny", {{"v", std::to_string(v)}},
          "extern \"C\" __global__ void fill(int* o) { o[threadIdx.x] = " + std::to_string(v) + "; }\n",
          TargetKind::Cuda, "sm_90a"};
}
// One bucket of the real kernels; `salt` makes each iteration a new key.
KernelSpec mhc_host(int salt) {
  return {"bench_mhc_pre", {{"num_splits", "16"}, {"salt", std::to_string(salt)}},
          "#include \"cpu/mhc_pre.hpp\"\n// salt " + std::to_string(salt) +
              "\nextern \"C\" int partial(const hcwarm_mhc_pre_params* p, int64_t a, int64_t b) {\n"
              "  return hcwarm_kernels::cpu::mhc_pre_partial<16, 4, 7168>(p, a, b); }\n"
              "extern \"C\" int finish(const hcwarm_mhc_pre_params* p, int64_t a, int64_t b) {\n"
              "  return hcwarm_kernels::cpu::mhc_pre_finish<16, 4, 7168, true>(p, a, b); }\n",
          TargetKind::Host, ""};
}
KernelSpec mhc_cuda(int salt) {
  return {"bench_mhc_pre", {{"splits", "5+"}, {"salt", std::to_string(salt)}},
          "#include \"cuda/mhc_pre.cuh\"\n// salt " + std::to_string(salt) +
              "\nextern \"C\" __global__ void __launch_bounds__(128) partial(hcwarm_mhc_pre_params p) {\n"
              "  hcwarm_kernels::cuda::mhc_pre_partial<5, 4, 7168>(p); }\n"
              "extern \"C\" __global__ void __launch_bounds__(128) finish(hcwarm_mhc_pre_params p) {\n"
              "  hcwarm_kernels::cuda::mhc_pre_finish<5, 4, 7168, true>(p); }\n",
          TargetKind::Cuda, "sm_90a"};
}

JitOptions opts(std::optional<std::filesystem::path> dir) {
  JitOptions o;
  o.cache_dir = std::move(dir);
  return o;
}

// Compile-only (no loading: no GPU here), memory-only runtime: pure compile time.
template <KernelSpec (*Make)(int)>
void BM_Compile(benchmark::State& state) {
  JitRuntime rt(opts(std::nullopt));
  for (auto _ : state) {
    const KernelSpec spec = Make(1000000 + g_unique++);
    const std::vector<KernelSpec> one{spec};
    const auto r = rt.build(one, BuildMode::CompileOnly);
    if (r.failed) {
      state.SkipWithError(r.errors.empty() ? "compile failed" : r.errors[0].substr(0, 300).c_str());
      break;
    }
  }
}

// A fresh runtime per iteration finds the key on disk: verify (SHA-256 of every
// file) + load (host: memfd + dlopen; CUDA: bytes only, no GPU loader here).
template <KernelSpec (*Make)(int)>
void BM_DiskLoad(benchmark::State& state) {
  fsu::ScratchDir dir(std::filesystem::temp_directory_path(), "hcwarm-bench-");
  const KernelSpec spec = Make(7);
  const bool cuda = spec.target == TargetKind::Cuda;
  const std::vector<KernelSpec> one{spec};
  try {
    JitRuntime warm(opts(dir.path()));
    if (warm.build(one, BuildMode::CompileOnly).failed) {
      state.SkipWithError("compile failed");
      return;
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  for (auto _ : state) {
    JitRuntime rt(opts(dir.path()));
    if (cuda) {
      const auto r = rt.build(one, BuildMode::CompileOnly);
      if (r.loaded_from_disk != 1) state.SkipWithError("not loaded from disk");
    } else {
      benchmark::DoNotOptimize(rt.get(spec)->function(spec.family == "bench_tiny" ? "answer" : "partial"));
      if (rt.stats().loaded_from_disk != 1) state.SkipWithError("not loaded from disk");
    }
  }
}

// get() of a loaded key: hashes the source and its headers into the key, then a map lookup.
template <KernelSpec (*Make)(int)>
void BM_MemoryHit(benchmark::State& state) {
  JitRuntime rt(opts(std::nullopt));
  const KernelSpec spec = Make(3);
  try {
    rt.get(spec);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(rt.get(spec));
}

struct Quiet {
  Quiet() { spdlog::set_level(spdlog::level::warn); }
} quiet;

}  // namespace

BENCHMARK(BM_Compile<tiny_host>)->Name("compile/host/tiny")->Unit(benchmark::kMillisecond)->Iterations(10);
BENCHMARK(BM_Compile<mhc_host>)->Name("compile/host/mhc_pre")->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Compile<tiny_cuda>)->Name("compile/nvrtc_sm90a/tiny")->Unit(benchmark::kMillisecond)->Iterations(10);
BENCHMARK(BM_Compile<mhc_cuda>)->Name("compile/nvrtc_sm90a/mhc_pre")->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_DiskLoad<tiny_host>)->Name("disk_load/host/tiny")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DiskLoad<mhc_host>)->Name("disk_load/host/mhc_pre")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DiskLoad<tiny_cuda>)->Name("disk_load/cubin/tiny")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DiskLoad<mhc_cuda>)->Name("disk_load/cubin/mhc_pre")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MemoryHit<tiny_host>)->Name("memory_hit/host/tiny")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MemoryHit<mhc_host>)->Name("memory_hit/host/mhc_pre")->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
