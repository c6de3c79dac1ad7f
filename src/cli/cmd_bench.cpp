// hcwarm bench op: microseconds per hc_pre call, GB/s and the fraction of the
// machine's measured copy bandwidth, specialized (JIT) and generic (ahead of
// time) kernels side by side, and the compile time of each specialization.
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>

#include "backends/cuda/cuda_device.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "jit/jit_runtime.hpp"
#include "mhc/hc_pre_op.hpp"

namespace hcwarm::cli {
namespace {

struct BenchOptions {
  std::vector<int> hidden{4096, 7168};
  std::vector<int64_t> tokens{1, 8, 64, 128, 512, 2048, 4096, 8192, 16384};
  int64_t buckets = 0;  // > 0: instead of tokens, the representative of every split bucket of [1, buckets]
  std::string backend;  // "" = default
  std::string variant = "both";
  std::string gemm = "mma_smem";
  bool precise_finish = false;  // cuda specialized: the one-thread IEEE finish instead of the default warp one
  bool norm = true;
  bool json = false;
  bool stages = false;  // also time the two kernels apart (and num_splits 1's other path)
  std::string json_out;  // also write the JSON here
  double min_seconds = 0.2;
  int num_sms = 0;
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One set of inputs/outputs on the device; several are rotated so that repeated
// calls do not just re-read the L2 cache.
struct IoSet {
  DeviceBuffer residual, y, post, comb;
};

struct Measured {
  double us = 0;
  double compile_s = -1;     // time inside the compiler (NVRTC / host compiler) on the first call (specialized only)
  double first_call_s = -1;  // the first call's whole JIT request: compile, cache publish, module load
  bool ok = false;
  std::string error;
};

class Timer {
 public:
  explicit Timer(Device& d) : dev_(d), cuda_(dynamic_cast<cuda::CudaDevice*>(&d)) {
    if (cuda_ != nullptr) {
      const auto& drv = cuda_->driver();
      HCWARM_CHECK_CU(drv, drv.cuEventCreate(&start_, cuda::CU_EVENT_DEFAULT));
      HCWARM_CHECK_CU(drv, drv.cuEventCreate(&stop_, cuda::CU_EVENT_DEFAULT));
    }
  }
  ~Timer() {
    if (cuda_ != nullptr) {
      cuda_->driver().cuEventDestroy(start_);
      cuda_->driver().cuEventDestroy(stop_);
    }
  }
  // Seconds for fn() run `iters` times.
  template <class F>
  double time(int iters, F&& fn) {
    if (cuda_ == nullptr) {
      const auto t0 = Clock::now();
      for (int i = 0; i < iters; ++i) fn(i);
      return seconds_since(t0);
    }
    const auto& drv = cuda_->driver();
    HCWARM_CHECK_CU(drv, drv.cuEventRecord(start_, cuda_->stream()));
    for (int i = 0; i < iters; ++i) fn(i);
    HCWARM_CHECK_CU(drv, drv.cuEventRecord(stop_, cuda_->stream()));
    HCWARM_CHECK_CU(drv, drv.cuEventSynchronize(stop_));
    float ms = 0;
    HCWARM_CHECK_CU(drv, drv.cuEventElapsedTime(&ms, start_, stop_));
    return ms * 1e-3;
  }

 private:
  Device& dev_;
  cuda::CudaDevice* cuda_;
  cuda::CUevent start_ = nullptr, stop_ = nullptr;
};

// Copy bandwidth (bytes read + bytes written per second) of a large device copy.
double copy_bandwidth(Device& dev) {
  const size_t bytes = dev.kind() == DeviceKind::Cuda ? (size_t{1} << 30) : (size_t{256} << 20);
  DeviceBuffer a(dev, bytes), b(dev, bytes);
  dev.fill_zero(a.get(), bytes);
  dev.fill_zero(b.get(), bytes);
  Timer timer(dev);
  auto* cd = dynamic_cast<cuda::CudaDevice*>(&dev);
  auto copy = [&](int i) {
    void* dst = (i % 2) ? a.get() : b.get();
    void* src = (i % 2) ? b.get() : a.get();
    if (cd != nullptr) {
      HCWARM_CHECK_CU(cd->driver(), cd->driver().cuMemcpyDtoDAsync(reinterpret_cast<cuda::CUdeviceptr>(dst),
                                                                    reinterpret_cast<cuda::CUdeviceptr>(src), bytes,
                                                                    cd->stream()));
    } else {
      std::memcpy(dst, src, bytes);
    }
  };
  timer.time(2, copy);
  const int iters = cd != nullptr ? 20 : 4;
  const double s = timer.time(iters, copy);
  dev.synchronize();
  return 2.0 * static_cast<double>(bytes) * iters / s;
}

Measured measure(const std::function<void(const mhc::HcPreArgs&)>& run, Device& dev, std::vector<IoSet>& sets,
                 const mhc::HcPreArgs& base_args, double min_seconds, jit::JitRuntime* rt) {
  Measured m;
  try {
    auto call = [&](int i) {
      IoSet& s = sets[static_cast<size_t>(i) % sets.size()];
      mhc::HcPreArgs a = base_args;
      a.residual = s.residual.as<bf16>();
      a.y = s.y.as<bf16>();
      a.post = s.post.as<float>();
      a.comb = s.comb.as<float>();
      run(a);
    };
    const size_t events_before = rt != nullptr ? rt->events().size() : 0;
    const double compiler_before = rt != nullptr ? rt->stats().compile_seconds : 0.0;
    call(0);  // compile / load
    dev.synchronize();
    if (rt != nullptr) {
      const auto ev = rt->events();
      for (size_t i = events_before; i < ev.size(); ++i) {
        if (ev[i].source == jit::ArtifactSource::Compiled) m.first_call_s = std::max(m.first_call_s, ev[i].seconds);
      }
      if (m.first_call_s >= 0) m.compile_s = rt->stats().compile_seconds - compiler_before;
    }
    Timer timer(dev);
    timer.time(3, call);  // warm up
    // Grow the iteration count until a run lasts min_seconds.
    int iters = 5;
    double s = timer.time(iters, call);
    while (s < min_seconds && iters < (1 << 20)) {
      iters = static_cast<int>(std::min<double>(iters * 8.0, iters * std::max(2.0, 1.2 * min_seconds / std::max(s, 1e-9))));
      s = timer.time(iters, call);
    }
    m.us = s / iters * 1e6;
    m.ok = true;
  } catch (const Error& e) {
    m.error = e.message();
  }
  return m;
}

void run_bench(const CliContext& ctx, const BenchOptions& o) {
  const mhc::Backend backend =
      o.backend.empty() ? mhc::default_backend(ctx.env.cuda_library) : mhc::parse_backend(o.backend);
  HCWARM_CHECK_ARG(backend != mhc::Backend::Reference, "bench op measures the cpu and cuda backends");
  HCWARM_CHECK_ARG(o.variant == "both" || o.variant == "specialized" || o.variant == "generic",
                   "--variant must be both, specialized or generic");
  std::unique_ptr<Device> dev;
  if (backend == mhc::Backend::Cuda) {
    dev = std::make_unique<cuda::CudaDevice>(0, ctx.env.cuda_library);
  } else {
    dev = std::make_unique<CpuDevice>();
  }
  auto* cd = dynamic_cast<cuda::CudaDevice*>(dev.get());
  const int sms = o.num_sms > 0 ? o.num_sms : (cd != nullptr ? cd->num_sms() : ctx.env.num_sms.value_or(kDefaultNumSms));

  // Memory-only JIT: the first call of each bucket is a real compile, timed.
  jit::JitOptions jo = jit::JitOptions::from_env(ctx.env);
  jo.cache_dir = std::nullopt;
  jo.progress = false;
  jit::JitRuntime rt(jo);
  if (cd != nullptr) rt.set_module_loader(jit::TargetKind::Cuda, std::make_shared<cuda::CudaModuleLoader>(*cd));

  const double copy_bw = copy_bandwidth(*dev);
  const std::string machine = cd != nullptr ? fmt::format("{} ({} SMs, {})", cd->name(), cd->num_sms(), cd->arch())
                                            : fmt::format("cpu ({} threads)", std::thread::hardware_concurrency());
  nlohmann::json out;
  out["machine"] = machine;
  out["backend"] = mhc::to_string(backend);
  out["copy_gbps"] = copy_bw / 1e9;
  out["norm"] = o.norm;
  out["num_sms"] = sms;
  out["gemm"] = o.gemm;
  out["fast_finish"] = !o.precise_finish;
  out["rows"] = nlohmann::json::array();
  if (!o.json) {
    std::cout << fmt::format("hcwarm bench op: {} backend on {}; copy bandwidth {:.0f} GB/s (read + write); norm {}\n",
                             mhc::to_string(backend), machine, copy_bw / 1e9, o.norm ? "fused" : "off");
    std::cout << fmt::format("{:>5} {:>6} {:>6} | {:>10} {:>8} {:>6} | {:>10} {:>8} {:>6} | {:>7} {:>9} | {:>8} {:>8} {:>8}\n",
                             "D", "T", "splits", "spec us", "GB/s", "%copy", "gen us", "GB/s", "%copy", "gen/spec",
                             "compile s", "a us", "b us", ctx.env.mhc_one_pass ? "2pass us" : "1pass us");
  }
  std::mt19937_64 rng(42);
  std::normal_distribution<float> n01;
  // Residual values: a pool of N(0,1) bf16 drawn once, copied from rotating offsets.
  std::vector<bf16> pool(size_t{1} << 22);
  for (auto& v : pool) v = bf16::from_float(n01(rng));
  size_t pool_pos = 0;
  for (int D : o.hidden) {
    const mhc::MhcDims dims{4, D};
    mhc::HcPreOp spec(backend, dims, {}, sms, &rt, *dev, mhc::Variant::Specialized);
    HCWARM_CHECK_ARG(o.gemm == "ffma" || o.gemm == "mma" || o.gemm == "mma_smem", "--gemm must be mma_smem, mma or ffma");
    spec.set_cuda_fast_finish(!o.precise_finish);
    spec.set_cuda_one_pass(ctx.env.mhc_one_pass);
    spec.set_cuda_gemm(o.gemm == "ffma" ? mhc::CudaGemm::Ffma : (o.gemm == "mma" ? mhc::CudaGemm::Mma : mhc::CudaGemm::MmaSmem));
    mhc::HcPreOp gen(backend, dims, {}, sms, nullptr, *dev, mhc::Variant::Generic);
    gen.set_cuda_one_pass(ctx.env.mhc_one_pass);  // the generic fatbin has a one-pass kernel too
    // Weights, shared by every call.
    std::vector<float> fn(static_cast<size_t>(dims.mix() * dims.k())), scale(3), basev(static_cast<size_t>(dims.mix()));
    for (auto& v : fn) v = 1e-3f * n01(rng);
    for (auto& v : scale) v = 0.1f * n01(rng);
    for (auto& v : basev) v = 0.1f * n01(rng);
    std::vector<bf16> w(static_cast<size_t>(D));
    for (auto& v : w) v = bf16::from_float(1.0f + 0.1f * n01(rng));
    DeviceBuffer fn_d(*dev, fn.size() * 4), scale_d(*dev, 12), base_d(*dev, basev.size() * 4), w_d(*dev, w.size() * 2);
    dev->copy_from_host(fn_d.get(), fn.data(), fn.size() * 4);
    dev->copy_from_host(scale_d.get(), scale.data(), 12);
    dev->copy_from_host(base_d.get(), basev.data(), basev.size() * 4);
    dev->copy_from_host(w_d.get(), w.data(), w.size() * 2);

    // Every split bucket once (its largest token count), or the given token counts.
    const std::vector<int64_t> tokens = o.buckets > 0 ? spec.representatives(o.buckets) : o.tokens;
    for (int64_t T : tokens) {
      HCWARM_CHECK_ARG(T >= 1, "--tokens must be >= 1, got {}", T);
      const size_t res_bytes = static_cast<size_t>(T) * dims.k() * 2;
      const size_t y_bytes = static_cast<size_t>(T) * D * 2;
      const size_t pc_bytes = static_cast<size_t>(T) * (4 + 16) * 4;
      // Rotate over enough sets to exceed the L2 (GPU) / LLC (CPU) several times, within 2 GiB.
      const size_t target = size_t{512} << 20;
      size_t nsets = std::clamp<size_t>(target / res_bytes, 1, 16);
      if (nsets * res_bytes > (size_t{2} << 30)) nsets = 1;
      std::vector<IoSet> sets;
      std::vector<bf16> host(static_cast<size_t>(T) * dims.k());
      for (size_t s = 0; s < nsets; ++s) {
        for (size_t i = 0; i < host.size(); ++i) host[i] = pool[(pool_pos + i * 7) % pool.size()];
        pool_pos += 1237;
        IoSet io{DeviceBuffer(*dev, res_bytes), DeviceBuffer(*dev, y_bytes), DeviceBuffer(*dev, T * 4 * 4),
                 DeviceBuffer(*dev, T * 16 * 4)};
        dev->copy_from_host(io.residual.get(), host.data(), res_bytes);
        sets.push_back(std::move(io));
      }
      mhc::HcPreArgs a;
      a.num_tokens = T;
      a.fn = fn_d.as<float>();
      a.scale = scale_d.as<float>();
      a.base = base_d.as<float>();
      a.norm_weight = o.norm ? w_d.as<bf16>() : nullptr;
      const double bytes = static_cast<double>(res_bytes + y_bytes + pc_bytes);
      Measured ms, mg, ma, mb, m2;
      const int splits = spec.num_splits(T);
      auto run_spec = [&](const mhc::HcPreArgs& x) { spec.run(x); };
      if (o.variant != "generic") ms = measure(run_spec, *dev, sets, a, o.min_seconds, &rt);
      if (o.variant != "specialized") {
        mg = measure([&](const mhc::HcPreArgs& x) { gen.run(x); }, *dev, sets, a, o.min_seconds, nullptr);
      }
      if (o.stages && o.variant != "generic") {
        // The two kernels timed apart (stage b reads what a wrote in the earlier call).
        ma = measure([&](const mhc::HcPreArgs& x) { spec.run_with_splits(x, splits, 1); }, *dev, sets, a,
                     o.min_seconds / 2, nullptr);
        mb = measure([&](const mhc::HcPreArgs& x) { spec.run_with_splits(x, splits, 2); }, *dev, sets, a,
                     o.min_seconds / 2, nullptr);
        if (splits == 1 && backend == mhc::Backend::Cuda) {
          // The other num_splits-1 path: the two kernels when the specialized
          // column ran the one-pass kernel (the default), and vice versa.
          const bool was = spec.cuda_one_pass();
          spec.set_cuda_one_pass(!was);
          m2 = measure(run_spec, *dev, sets, a, o.min_seconds / 2, nullptr);
          spec.set_cuda_one_pass(was);
        }
      }
      auto gbps = [&](const Measured& m) { return m.ok ? bytes / (m.us * 1e-6) / 1e9 : 0.0; };
      nlohmann::json row{{"hidden", D},
                         {"tokens", T},
                         {"num_splits", spec.num_splits(T)},
                         {"bytes", bytes}};
      if (ms.ok) row["specialized"] = {{"us", ms.us}, {"gbps", gbps(ms)}, {"copy_fraction", gbps(ms) * 1e9 / copy_bw},
                                       {"compile_s", ms.compile_s}, {"first_call_s", ms.first_call_s}};
      if (ma.ok) row["stage_a_us"] = ma.us;
      if (mb.ok) row["stage_b_us"] = mb.us;
      if (m2.ok) row[spec.cuda_one_pass() ? "two_pass_us" : "one_pass_us"] = m2.us;
      if (mg.ok) row["generic"] = {{"us", mg.us}, {"gbps", gbps(mg)}, {"copy_fraction", gbps(mg) * 1e9 / copy_bw}};
      if (!ms.error.empty()) row["specialized_error"] = ms.error;
      if (!mg.error.empty()) row["generic_error"] = mg.error;
      out["rows"].push_back(row);
      if (!o.json) {
        auto cell = [&](const Measured& m) {
          if (!m.ok) return fmt::format("{:>10} {:>8} {:>6}", "-", "-", "-");
          return fmt::format("{:>10.2f} {:>8.0f} {:>5.0f}%", m.us, gbps(m), 100.0 * gbps(m) * 1e9 / copy_bw);
        };
        auto us = [](const Measured& m) { return m.ok ? fmt::format("{:.1f}", m.us) : std::string("-"); };
        std::cout << fmt::format("{:>5} {:>6} {:>6} | {} | {} | {:>7} {:>9} | {:>8} {:>8} {:>8}\n", D, T, splits,
                                 cell(ms), cell(mg), ms.ok && mg.ok ? fmt::format("{:.2f}x", mg.us / ms.us) : "-",
                                 ms.compile_s >= 0 ? fmt::format("{:.3f}", ms.compile_s) : "-", us(ma), us(mb),
                                 us(m2));
        if (!ms.error.empty()) std::cout << "  specialized: " << ms.error << "\n";
        if (!mg.error.empty()) std::cout << "  generic: " << mg.error << "\n";
        std::cout.flush();
      }
    }
  }
  if (o.json) std::cout << out.dump(2) << "\n";
  if (!o.json_out.empty()) {
    std::ofstream f(o.json_out);
    f << out.dump(2) << "\n";
    HCWARM_CHECK_ARG(f.good(), "cannot write {}", o.json_out);
  }
}

}  // namespace

void register_bench(CLI::App& app, CliContext& ctx) {
  auto* bench = app.add_subcommand(
      "bench", "Benchmarks: op (hc_pre speed, specialized vs generic), serve (the four start-up configurations)");
  bench->require_subcommand(1);
  auto o = std::make_shared<BenchOptions>();
  auto* op = bench->add_subcommand("op", "Time hc_pre: us per call, GB/s, fraction of copy bandwidth, specialized vs generic");
  op->add_option("--hidden", o->hidden, "hidden sizes (comma separated)")->delimiter(',');
  auto* tokens = op->add_option("--tokens", o->tokens, "token counts (comma separated)")->delimiter(',');
  op->add_option("--buckets", o->buckets,
                 "time every split bucket of token counts [1, N] once (its largest T) instead of --tokens")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24))
      ->excludes(tokens);
  op->add_option("--backend", o->backend, "cpu | cuda (default: cuda when a GPU is present, else cpu)");
  op->add_option("--variant", o->variant, "both | specialized | generic");
  op->add_option("--gemm", o->gemm, "cuda specialized GEMM: mma_smem (tensor cores, fn in smem) | mma (per-warp fn) | ffma");
  op->add_option("--num-sms", o->num_sms, "SM count for the split policy (default: the GPU's, or HCWARM_NUM_SMS / 132)");
  op->add_option("--min-seconds", o->min_seconds, "minimum timed seconds per measurement");
  op->add_flag("!--no-norm", o->norm, "without the fused RMSNorm");
  op->add_flag("--json", o->json, "print JSON");
  op->add_flag("--precise-finish", o->precise_finish,
               "cuda specialized: IEEE reciprocals in the scalar part (sigmoids, Sinkhorn) instead of the default fast ones");
  op->add_flag("--stages", o->stages, "also time stage a and stage b apart, and for num_splits 1 on CUDA the other path: the two kernels (column "
                  "'2pass us'), or the one-pass kernel under HCWARM_MHC_ONE_PASS=0 ('1pass us')");
  op->add_option("--json-out", o->json_out, "also write the JSON report to this file");
  op->callback([&ctx, o] { run_bench(ctx, *o); });
}

}  // namespace hcwarm::cli
