// hcwarm bench op: microseconds per hc_pre call, eager and under CUDA-graph
// replay (as serving engines run decode), GB/s and the fraction of the
// device's measured copy bandwidth, specialized (JIT) and generic (ahead of
// time) kernels side by side, and the compile time of each specialization.
// The timing helpers live in cli/bench_timing.hpp, the other ops' tables
// (--op) in cli/bench_family.cpp.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <thread>

#include "backends/cuda/cuda_device.hpp"
#include "cli/bench_family.hpp"
#include "cli/bench_rows.hpp"
#include "cli/bench_timing.hpp"
#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/limits.hpp"
#include "jit/jit_runtime.hpp"
#include "mhc/hc_pre_op.hpp"

namespace hcwarm::cli {
namespace {

using Json = BenchJson;  // keys in the order written: schema_version first

struct BenchOptions {
  std::vector<int> hidden{4096, 7168};
  std::vector<int64_t> tokens{1, 8, 64, 128, 512, 2048, 4096, 8192, 16384};
  int64_t buckets = 0;  // > 0: instead of tokens, the representative of every split bucket of [1, buckets]
  std::string backend;  // "" = default
  std::string op = "pre";  // pre | post-pre | head | pre-embed | all
  std::string variant = "both";
  bool precise_finish = false;  // cuda: IEEE reciprocals in the scalar part instead of the default fast ones
  bool norm = true;
  bool json = false;
  bool stages = false;  // also time the two kernels apart (and num_splits 1's other path)
  std::string json_out;  // also write the JSON here
  double min_seconds = 0.2;
  int graph_replays = 20;  // cuda: timed replays of each row's graph; 0 = no graph timing
  int num_sms = 0;
  bool in_place = false;    // post-pre: the new residual over the previous one
  int sinkhorn_iters = 20;  // the pre table: 0 shows what the Sinkhorn chain costs a call
};

// 2: eager_us / graph_us, copy_bandwidth_gbs, l2_bytes; bytes counts fn; op_rows (--op other than pre, additive)
constexpr int kJsonSchemaVersion = 2;

// Host values the rotation sets are filled from, drawn once per hidden size.
struct Weights {
  std::vector<float> fn, scale, base;
  std::vector<bf16> norm;
};

// One rotation set: a layer's own inputs, weights included, and outputs. Every
// layer of a model has its own fn, so rotating the weights too makes repeated
// calls read them from memory the way consecutive layers do.
struct IoSet {
  DeviceBuffer residual, fn, scale, base, norm_weight, y, post, comb;

  mhc::HcPreArgs args(int64_t T, bool norm) const {
    mhc::HcPreArgs a;
    a.num_tokens = T;
    a.residual = residual.as<bf16>();
    a.fn = fn.as<float>();
    a.scale = scale.as<float>();
    a.base = base.as<float>();
    a.norm_weight = norm ? norm_weight.as<bf16>() : nullptr;
    a.y = y.as<bf16>();
    a.post = post.as<float>();
    a.comb = comb.as<float>();
    return a;
  }
};

// The bytes of one set's buffers, in IoSet's order.
std::array<size_t, 8> set_buffer_bytes(const mhc::MhcDims& dims, int64_t T) {
  const auto t = static_cast<size_t>(T);
  const auto hc = static_cast<size_t>(dims.hc_mult), d = static_cast<size_t>(dims.hidden);
  const auto mix = static_cast<size_t>(dims.mix());
  return {t * hc * d * 2, mix * hc * d * 4, 3 * 4, mix * 4, d * 2, t * d * 2, t * hc * 4, t * hc * hc * 4};
}

std::vector<IoSet> make_sets(Device& dev, const mhc::MhcDims& dims, int64_t T, size_t count, const Weights& w,
                             ResidualPool& pool) {
  const auto bytes = set_buffer_bytes(dims, T);
  std::vector<bf16> residual(bytes[0] / 2);
  std::vector<IoSet> sets;
  sets.reserve(count);
  for (size_t s = 0; s < count; ++s) {
    IoSet io{DeviceBuffer(dev, bytes[0]), DeviceBuffer(dev, bytes[1]), DeviceBuffer(dev, bytes[2]),
             DeviceBuffer(dev, bytes[3]), DeviceBuffer(dev, bytes[4]), DeviceBuffer(dev, bytes[5]),
             DeviceBuffer(dev, bytes[6]), DeviceBuffer(dev, bytes[7])};
    pool.fill(residual);
    dev.copy_from_host(io.residual.get(), residual.data(), bytes[0]);
    // Same weight values in every set: what matters for timing is that each set has its own copy.
    dev.copy_from_host(io.fn.get(), w.fn.data(), bytes[1]);
    dev.copy_from_host(io.scale.get(), w.scale.data(), bytes[2]);
    dev.copy_from_host(io.base.get(), w.base.data(), bytes[3]);
    dev.copy_from_host(io.norm_weight.get(), w.norm.data(), bytes[4]);
    sets.push_back(std::move(io));
  }
  return sets;
}

using RunFn = std::function<void(const mhc::HcPreArgs&)>;

void run_bench(const CliContext& ctx, const BenchOptions& o) {
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
    dev = std::make_unique<cuda::CudaDevice>(0, ctx.env.cuda_library);
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
  if (!o.json && pre_table) {
    std::string header = fmt::format(
        "{:>5} {:>6} {:>6} {:>5} | {:>9} {:>6} {:>9} {:>6} | {:>9} {:>6} {:>9} {:>6} | {:>8} {:>9}", "D", "T", "splits",
        "sets", "spec us", "%copy", "graph us", "%copy", "gen us", "%copy", "graph us", "%copy", "gen/spec", "compile s");
    if (o.stages) {
      header += fmt::format(" | {:>8} {:>8} {:>8}", "a us", "b us", ctx.env.mhc_one_pass ? "2pass us" : "1pass us");
    }
    std::cout << header << "\n";
  }
  std::mt19937_64 rng(42);
  std::normal_distribution<float> n01;
  ResidualPool pool(rng);
  for (int D : pre_table ? o.hidden : std::vector<int>{}) {
    const mhc::MhcDims dims{4, D};
    mhc::MhcConstants constants;
    constants.sinkhorn_iters = o.sinkhorn_iters;
    mhc::HcPreOp spec(backend, dims, constants, sms, &rt, *dev, mhc::Variant::Specialized);
    spec.set_cuda_fast_finish(!o.precise_finish);
    spec.set_tiered(false);  // every timed call runs the specialized kernels, never the generic ones meanwhile
    spec.set_cuda_one_pass(ctx.env.mhc_one_pass);
    mhc::HcPreOp gen(backend, dims, constants, sms, nullptr, *dev, mhc::Variant::Generic);
    gen.set_cuda_one_pass(ctx.env.mhc_one_pass);  // the generic fatbin has a one-pass kernel too
    gen.set_cuda_fast_finish(!o.precise_finish);
    Weights w{std::vector<float>(static_cast<size_t>(dims.mix() * dims.k())), std::vector<float>(3),
              std::vector<float>(static_cast<size_t>(dims.mix())), std::vector<bf16>(static_cast<size_t>(D))};
    for (auto& v : w.fn) v = 1e-3f * n01(rng);
    for (auto& v : w.scale) v = 0.1f * n01(rng);
    for (auto& v : w.base) v = 0.1f * n01(rng);
    for (auto& v : w.norm) v = bf16::from_float(1.0f + 0.1f * n01(rng));

    // Every split bucket once (its largest token count), or the given token counts.
    const std::vector<int64_t> tokens = o.buckets > 0 ? spec.representatives(o.buckets) : o.tokens;
    for (int64_t T : tokens) {
      HCWARM_CHECK_ARG(T >= 1, "--tokens must be >= 1, got {}", T);
      const auto b = set_buffer_bytes(dims, T);
      size_t set_bytes = 0;
      for (size_t x : b) set_bytes += x;
      // What hc_pre must move: the residual and fn read, y, post and comb written.
      const double bytes = static_cast<double>(b[0] + b[1] + b[5] + b[6] + b[7]);
      const size_t nsets = rotation_count(set_bytes, cache_bytes, cd != nullptr);
      // The split count the call runs with (the one-pass kernel's 1 where it serves the bucket).
      const int splits = spec.kernel_splits(T);
      Json row{{"hidden", D},     {"tokens", T},           {"num_splits", splits}, {"bucket_splits", spec.num_splits(T)},
               {"bytes", bytes},  {"rotation_sets", nsets}, {"rotation_bytes", nsets * set_bytes}};
      std::vector<IoSet> sets;
      try {
        sets = make_sets(*dev, dims, T, nsets, w, pool);
      } catch (const Error& e) {
        // Out of device memory, say: this row fails, the others still run.
        row["error"] = e.message();
        out["rows"].push_back(row);
        if (!o.json) std::cout << fmt::format("{:>5} {:>6} {:>6} {:>5} | {}\n", D, T, splits, nsets, e.message());
        continue;
      }
      Measured ms, mg, ma, mb, m2;
      // Call i reads set i (mod the count): the eager loop cycles, the graph holds one call per set.
      auto on_sets = [&](RunFn run) {
        return [&sets, T, norm = o.norm, run = std::move(run)](int i) {
          run(sets[static_cast<size_t>(i) % sets.size()].args(T, norm));
        };
      };
      const auto spec_calls = on_sets([&](const mhc::HcPreArgs& x) { spec.run(x); });
      const auto gen_calls = on_sets([&](const mhc::HcPreArgs& x) { gen.run(x); });
      const int ncalls = static_cast<int>(sets.size());
      if (o.variant != "generic") {
        ms = measure_eager(*dev, spec_calls, o.min_seconds, &rt);
        if (graph_on) measure_graph(ms, *cd, spec_calls, ncalls, o.graph_replays);
      }
      if (o.variant != "specialized") {
        mg = measure_eager(*dev, gen_calls, o.min_seconds, nullptr);
        if (graph_on) measure_graph(mg, *cd, gen_calls, ncalls, o.graph_replays);
      }
      if (o.stages) {
        // The two kernels timed apart, eager (stage b reads what a wrote in the earlier call):
        // the specialized ones, or the generic ones with --variant generic.
        mhc::HcPreOp& staged = o.variant == "generic" ? gen : spec;
        ma = measure_eager(*dev, on_sets([&](const mhc::HcPreArgs& x) { staged.run_with_splits(x, splits, 1); }),
                           o.min_seconds / 2, nullptr);
        mb = measure_eager(*dev, on_sets([&](const mhc::HcPreArgs& x) { staged.run_with_splits(x, splits, 2); }),
                           o.min_seconds / 2, nullptr);
        if (splits == 1 && backend == mhc::Backend::Cuda && o.variant != "generic") {
          // The other num_splits-1 path: the two kernels when the specialized
          // column ran the one-pass kernel (the default), and vice versa.
          const bool was = spec.cuda_one_pass();
          spec.set_cuda_one_pass(!was);
          m2 = measure_eager(*dev, spec_calls, o.min_seconds / 2, nullptr);
          spec.set_cuda_one_pass(was);
        }
      }
      const size_t graph_calls = graph_on ? nsets : 0;
      if (ms.ok) {
        row["specialized"] = variant_json(ms, bytes, copy_bw, graph_calls);
        row["specialized"]["compile_s"] = ms.compile_s;
        row["specialized"]["first_call_s"] = ms.first_call_s;
      }
      if (ma.ok) row["stage_a_us"] = ma.us;
      if (mb.ok) row["stage_b_us"] = mb.us;
      if (m2.ok) row[spec.cuda_one_pass() ? "two_pass_us" : "one_pass_us"] = m2.us;
      if (mg.ok) row["generic"] = variant_json(mg, bytes, copy_bw, graph_calls);
      if (!ms.error.empty()) row["specialized_error"] = ms.error;
      if (!mg.error.empty()) row["generic_error"] = mg.error;
      out["rows"].push_back(row);
      if (!o.json) {
        auto us = [](const Measured& m) { return m.ok ? fmt::format("{:.1f}", m.us) : std::string("-"); };
        const bool cuda = cd != nullptr;
        std::string line = fmt::format(
            "{:>5} {:>6} {:>6} {:>5} | {} | {} | {:>8} {:>9}", D, T, splits, nsets,
            variant_cell(ms, bytes, copy_bw, cuda, graph_on), variant_cell(mg, bytes, copy_bw, cuda, graph_on),
            ms.ok && mg.ok ? fmt::format("{:.2f}x", mg.us / ms.us) : "-",
            ms.compile_s >= 0 ? fmt::format("{:.3f}", ms.compile_s) : "-");
        if (o.stages) line += fmt::format(" | {:>8} {:>8} {:>8}", us(ma), us(mb), us(m2));
        std::cout << line << "\n";
        if (!ms.error.empty()) std::cout << "  specialized: " << ms.error << "\n";
        if (!ms.graph_error.empty()) std::cout << "  specialized graph: " << ms.graph_error << "\n";
        if (!mg.error.empty()) std::cout << "  generic: " << mg.error << "\n";
        if (!mg.graph_error.empty()) std::cout << "  generic graph: " << mg.graph_error << "\n";
        std::cout.flush();
      }
    }
  }
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
  for (const FamilyOp f : family) run_family_bench(fb, f, o.hidden, o.tokens, o.buckets, rng, pool, out["op_rows"]);
  if (o.json) std::cout << out.dump(2) << "\n";
  if (!o.json_out.empty()) {
    write_output_file(o.json_out, out.dump(2) + "\n");
  }
}

constexpr const char* kBenchOpFooter = R"(Each row is one hidden size D and token count T; every call reads its own
set of inputs and weights (residual, fn, scale, base, norm weight; y, post,
comb written), rotating over 'sets' sets whose bytes are >= 3x the GPU's L2
(CPU: its last-level cache, at most 64 sets), at least 8 on CUDA.

Columns, for the specialized (spec) and generic (gen) kernels:
  spec us / gen us  eager: mean us per call, back to back on the device
                    stream for >= --min-seconds (launch cost included)
  graph us          CUDA: one graph of 'sets' consecutive calls (one per set),
                    replayed; median over --graph-replays replays of
                    (replay time / calls). n/a on the CPU
  %copy             bytes moved (residual + fn read, y + post + comb written)
                    per second, over the copy bandwidth measured at start
                    (GPU: 1 GiB device-to-device, read + write, median of 10)
  gen/spec          eager generic / eager specialized
  compile s         compiler time of the bucket's first specialized call
  splits            the split count the call runs with: the bucket's, or 1
                    where the one-pass kernel serves the bucket (JSON:
                    num_splits; bucket_splits, the split policy's)
  a us, b us        with --stages (eager): the partial and the finish kernel
                    alone at that split count (the generic ones with
                    --variant generic)
  2pass us / 1pass us   with --stages, splits 1 on CUDA (eager): the call with
                    the one-pass kernel off (HCWARM_MHC_ONE_PASS=0: the split
                    policy's kernels) / on

--op post-pre | head | pre-embed (or all) adds a table per op, its columns
specialized unless named gen, each eager us, %copy, graph us, %copy:
  post-pre   fused (hc_pre with input post: the post step of the previous
             sublayer and this pre step in one pass), fused gen, post+pre
             (hc_post, then hc_pre on its new residual); %copy of all three
             over the fused op's bytes (residual, x, prev post/comb, fn read;
             new residual, y, post, comb written); pair/fused
  head       head (hc_head as dispatched), on CUDA where the shape has both
             kernels also head 1pass and head cluster (each forced at every
             T), pre (hc_pre at the same T); head/pre
  pre-embed  embed (hc_pre of the first layer from the (T, D) embedding),
             embed gen, pre (hc_pre on the hc streams); pre/embed

JSON (schema_version 2): top level copy_bandwidth_gbs, l2_bytes (null on the
CPU), graph_replays, op; per row rotation_sets, and per variant eager_us, graph_us,
graph_calls_per_replay, *_gbps, *_copy_fraction (graph ones null on the CPU),
graph_error when a capture failed; us, gbps, copy_fraction and copy_gbps are
schema 1's names of the eager figures and the copy bandwidth. op_rows: the
other tables' rows (op, hidden, tokens, num_splits, rotation_sets, ratio, and
per column in "columns" the same figures plus bytes, compile_s of the first).)";

}  // namespace

void register_bench(CLI::App& app, CliContext& ctx) {
  auto* bench = app.add_subcommand(
      "bench", "Benchmarks: op (the mHC kernels' speed, specialized vs generic), serve (the five start-up configurations), cold-start (N ranks warming one cache)");
  bench->require_subcommand(1);
  auto o = std::make_shared<BenchOptions>();
  auto* op = bench->add_subcommand(
      "op", "Time hc_pre (and with --op the fused boundary, the head, the embedding input): us per call eager and under "
            "CUDA-graph replay, fraction of copy bandwidth, specialized vs generic");
  op->footer(kBenchOpFooter);
  // Sizes within limits.hpp's bounds, refused at parsing (exit 2) rather than failing an allocation.
  op->add_option("--hidden", o->hidden, "hidden sizes (comma separated)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, limits::kMaxHiddenSize))
      ->capture_default_str();
  auto* tokens = op->add_option("--tokens", o->tokens, "token counts (comma separated)")
                     ->delimiter(',')
                     ->check(CLI::Range(int64_t{1}, limits::kMaxTokens))
                     ->capture_default_str();
  op->add_option("--buckets", o->buckets,
                 "time every split bucket of token counts [1, N] once (its largest T) instead of --tokens")
      ->check(CLI::Range(int64_t{1}, limits::kMaxTokens))
      ->excludes(tokens);
  op->add_option("--backend", o->backend, "cpu | cuda (default: cuda when a GPU is present, else cpu)");
  op->add_option("--op", o->op,
                 "pre: hc_pre, specialized vs generic | post-pre: the fused sublayer boundary vs hc_post + hc_pre | "
                 "head: hc_head vs hc_pre | pre-embed: hc_pre from the embedding vs hc_pre | all: every table")
      ->capture_default_str();
  op->add_option("--variant", o->variant, "both | specialized | generic (the pre table)")->capture_default_str();
  op->add_option("--num-sms", o->num_sms, "SM count for the split policy (0: the GPU's, or HCWARM_NUM_SMS / 132)")->capture_default_str();
  op->add_option("--min-seconds", o->min_seconds, "minimum timed seconds per eager measurement")->capture_default_str();
  op->add_option("--graph-replays", o->graph_replays,
                 "cuda: timed replays of each row's graph (after 3 untimed); 0: no graph timing")
      ->capture_default_str();
  // A callback, not "!--no-norm": CLI11 would print that flag as --no-norm{false}.
  op->add_flag_callback("--no-norm", [o] { o->norm = false; }, "without the fused RMSNorm (default: fused)");
  add_json_flag(op, o->json);
  op->add_flag("--precise-finish", o->precise_finish,
               "cuda: IEEE reciprocals in the scalar part (sigmoids, Sinkhorn) instead of the default fast ones, in the specialized and the generic kernels");
  op->add_flag("--stages", o->stages, "also time stage a and stage b apart (the generic kernels' with --variant generic), and for num_splits 1 on CUDA the other path: the two kernels (column "
                  "'2pass us'), or the one-pass kernel under HCWARM_MHC_ONE_PASS=0 ('1pass us')");
  op->add_flag("--in-place", o->in_place,
               "post-pre: write the new residual over the previous one, as the model does (default: its own buffer)");
  op->add_option("--sinkhorn-iters", o->sinkhorn_iters,
                 "Sinkhorn iterations of the pre table's calls (the models use 20; 0 times the call without the chain)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  op->add_option("--json-out", o->json_out, "also write the JSON report to this file");
  op->callback([&ctx, o] { run_bench(ctx, *o); });
}

}  // namespace hcwarm::cli
