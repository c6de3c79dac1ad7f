// `hcwarm bench op`'s run (see cli/bench_op.hpp): the device, the memory-only
// JIT runtime, the copy bandwidth and the rotation's cache size, the report's
// preamble, then the tables.
#include "cli/bench_op.hpp"

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <random>
#include <thread>

#include "backends/cuda/cuda_device.hpp"
#include "cli/bench_family.hpp"
#include "cli/bench_pre_table.hpp"
#include "cli/bench_rows.hpp"
#include "cli/bench_timing.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "jit/jit_runtime.hpp"
#include "mhc/hc_pre_op.hpp"

namespace hcwarm::cli {
namespace {

using Json = BenchJson;  // keys in the order written: schema_version first

// 2: eager_us / graph_us, copy_bandwidth_gbs, l2_bytes; bytes counts fn; op_rows (--op other than pre, additive)
constexpr int kJsonSchemaVersion = 2;

}  // namespace

void run_bench_op(const CliContext& ctx, const BenchOpOptions& o) {
  const mhc::Backend backend =
      o.backend.empty() ? mhc::default_backend(ctx.env.cuda_library) : mhc::parse_backend(o.backend);
  HCWARM_CHECK_ARG(backend != mhc::Backend::Reference, "bench op measures the cpu and cuda backends");
  HCWARM_CHECK_ARG(o.variant == "both" || o.variant == "specialized" || o.variant == "generic",
                   "--variant must be both, specialized or generic");
  HCWARM_CHECK_ARG(o.graph_replays >= 0, "--graph-replays must be >= 0, got {}", o.graph_replays);
  HCWARM_CHECK_ARG(o.op == "pre" || o.op == "post-pre" || o.op == "head" || o.op == "pre-embed" || o.op == "all",
                   "--op must be pre, post-pre, head, pre-embed or all, got '{}'", o.op);
  const bool pre_table = o.op == "pre" || o.op == "all";
  std::vector<FamilyOp> family;
  for (const FamilyOp f : {FamilyOp::PostPre, FamilyOp::Head, FamilyOp::PreEmbed}) {
    if (o.op == "all" || o.op == to_string(f)) family.push_back(f);
  }
  std::unique_ptr<Device> dev;
  if (backend == mhc::Backend::Cuda) {
    dev = std::make_unique<cuda::CudaDevice>(0, ctx.env);
  } else {
    dev = std::make_unique<CpuDevice>();
  }
  auto* cd = dynamic_cast<cuda::CudaDevice*>(dev.get());
  const int sms = o.num_sms > 0 ? o.num_sms : (cd != nullptr ? cd->num_sms() : ctx.env.num_sms.value_or(kDefaultNumSms));
  const bool graph_on = cd != nullptr && o.graph_replays > 0;

  // Memory-only JIT: the first call of each bucket is a real compile, timed.
  jit::JitOptions jo = jit::JitOptions::from_env(ctx.env);
  jo.cache_dir = std::nullopt;
  jit::JitRuntime rt(jo);
  if (cd != nullptr) rt.set_module_loader(jit::TargetKind::Cuda, std::make_shared<cuda::CudaModuleLoader>(*cd));

  // GPU: a 1 GiB device-to-device copy, median of 10; CPU: a 256 MiB memcpy, median of 5.
  const double copy_bw = cd != nullptr ? copy_bandwidth(*dev, size_t{1} << 30, 3, 10)
                                       : copy_bandwidth(*dev, size_t{256} << 20, 1, 5);
  const size_t l2 = cd != nullptr ? l2_cache_bytes(*cd) : 0;
  // The rotation must outgrow the L2 (GPU) or the last-level cache (CPU); 50 MiB if the driver does not say.
  const size_t cache_bytes = cd != nullptr ? (l2 > 0 ? l2 : size_t{50} << 20) : cpu_cache_bytes();
  const std::string machine = cd != nullptr ? fmt::format("{} ({} SMs, {})", cd->name(), cd->num_sms(), cd->arch())
                                            : fmt::format("cpu ({} threads)", std::thread::hardware_concurrency());
  Json out;
  out["schema_version"] = kJsonSchemaVersion;
  out["machine"] = machine;
  out["backend"] = mhc::to_string(backend);
  out["copy_bandwidth_gbs"] = copy_bw / 1e9;
  out["copy_gbps"] = copy_bw / 1e9;  // schema 1's name
  out["l2_bytes"] = cd != nullptr ? Json(l2) : Json();
  out["rotation_cache_bytes"] = cache_bytes;
  out["graph_replays"] = graph_on ? Json(o.graph_replays) : Json();
  out["norm"] = o.norm;
  out["num_sms"] = sms;
  out["fast_finish"] = !o.precise_finish;
  out["sinkhorn_iters"] = o.sinkhorn_iters;
  out["in_place"] = o.in_place;
  out["op"] = o.op;
  out["rows"] = Json::array();
  out["op_rows"] = Json::array();
  if (!o.json) {
    std::cout << fmt::format("hcwarm bench op: {} backend on {}; copy bandwidth {:.0f} GB/s (read + write); norm {}\n",
                             mhc::to_string(backend), machine, copy_bw / 1e9, o.norm ? "fused" : "off");
    const double cache_mib = static_cast<double>(cache_bytes) / (1 << 20);
    if (cd != nullptr) {
      const std::string graph =
          graph_on ? fmt::format("graph us: one CUDA graph of one call per set, median of {} replays", o.graph_replays)
                   : std::string("no graph timing (--graph-replays 0)");
      std::cout << fmt::format("each call reads its own inputs and weights: 'sets' sets, >= 3x the {:.1f} MiB L2 "
                               "and >= {}; {}\n",
                               cache_mib, kMinGraphCalls, graph);
    } else {
      std::cout << fmt::format("each call reads its own inputs and weights: 'sets' sets, 3x the {:.1f} MiB last-level "
                               "cache (at most {}); no CUDA graphs on the CPU\n",
                               cache_mib, kMaxCpuSets);
    }
  }
  std::mt19937_64 rng(42);
  ResidualPool pool(rng);
  FamilyBench fb;
  fb.dev = dev.get();
  fb.cuda = cd;
  fb.rt = &rt;
  fb.num_sms = sms;
  fb.copy_bw = copy_bw;
  fb.cache_bytes = cache_bytes;
  fb.graph_replays = graph_on ? o.graph_replays : 0;
  fb.min_seconds = o.min_seconds;
  fb.norm = o.norm;
  fb.fast_finish = !o.precise_finish;
  fb.one_pass = ctx.env.mhc_one_pass;
  fb.in_place = o.in_place;
  fb.text = !o.json;
  if (pre_table) {
    run_pre_table(fb, {o.variant, o.stages, o.sinkhorn_iters}, o.hidden, o.tokens, o.buckets, rng, pool, out["rows"]);
  }
  for (const FamilyOp f : family) run_family_bench(fb, f, o.hidden, o.tokens, o.buckets, rng, pool, out["op_rows"]);
  if (o.json) std::cout << out.dump(2) << "\n";
  if (!o.json_out.empty()) {
    write_output_file(o.json_out, out.dump(2) + "\n");
  }
}

}  // namespace hcwarm::cli
