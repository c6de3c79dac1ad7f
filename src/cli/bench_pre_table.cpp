// The hc_pre table of `hcwarm bench op` (see cli/bench_pre_table.hpp): its
// rotation sets, and a row per (D, T) timed and printed.
#include "cli/bench_pre_table.hpp"

#include <fmt/format.h>

#include <array>
#include <functional>
#include <iostream>

#include "backends/cuda/cuda_device.hpp"
#include "cli/bench_timing.hpp"
#include "core/error.hpp"
#include "jit/jit_runtime.hpp"
#include "mhc/hc_pre_op.hpp"

namespace hcwarm::cli {
namespace {

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
    return {.num_tokens = T, .residual = residual.as<bf16>(), .fn = fn.as<float>(), .scale = scale.as<float>(),
            .base = base.as<float>(), .norm_weight = norm ? norm_weight.as<bf16>() : nullptr, .y = y.as<bf16>(),
            .post = post.as<float>(), .comb = comb.as<float>()};
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

}  // namespace

void run_pre_table(const FamilyBench& b, const PreTableOptions& t, const std::vector<int>& hidden,
                   const std::vector<int64_t>& given_tokens, int64_t buckets, std::mt19937_64& rng, ResidualPool& pool,
                   BenchJson& rows) {
  const mhc::Backend backend = b.cuda != nullptr ? mhc::Backend::Cuda : mhc::Backend::Cpu;
  const bool graph_on = b.graph_replays > 0;
  if (b.text) {
    std::string header = fmt::format(
        "{:>5} {:>6} {:>6} {:>5} | {:>9} {:>6} {:>9} {:>6} | {:>9} {:>6} {:>9} {:>6} | {:>8} {:>9}", "D", "T", "splits",
        "sets", "spec us", "%copy", "graph us", "%copy", "gen us", "%copy", "graph us", "%copy", "gen/spec", "compile s");
    if (t.stages) {
      header += fmt::format(" | {:>8} {:>8} {:>8}", "a us", "b us", b.one_pass ? "2pass us" : "1pass us");
    }
    std::cout << header << "\n";
  }
  std::normal_distribution<float> n01;
  for (int D : hidden) {
    const mhc::MhcDims dims{4, D};
    mhc::MhcConstants constants;
    constants.sinkhorn_iters = t.sinkhorn_iters;
    mhc::HcPreOp spec(backend, dims, constants, b.num_sms, b.rt, *b.dev, mhc::Variant::Specialized);
    spec.set_cuda_fast_finish(b.fast_finish);
    spec.set_tiered(false);  // every timed call runs the specialized kernels, never the generic ones meanwhile
    spec.set_cuda_one_pass(b.one_pass);
    mhc::HcPreOp gen(backend, dims, constants, b.num_sms, nullptr, *b.dev, mhc::Variant::Generic);
    gen.set_cuda_one_pass(b.one_pass);  // the generic fatbin has a one-pass kernel too
    gen.set_cuda_fast_finish(b.fast_finish);
    Weights w{std::vector<float>(static_cast<size_t>(dims.mix() * dims.k())), std::vector<float>(3),
              std::vector<float>(static_cast<size_t>(dims.mix())), std::vector<bf16>(static_cast<size_t>(D))};
    for (auto& v : w.fn) v = 1e-3f * n01(rng);
    for (auto& v : w.scale) v = 0.1f * n01(rng);
    for (auto& v : w.base) v = 0.1f * n01(rng);
    for (auto& v : w.norm) v = bf16::from_float(1.0f + 0.1f * n01(rng));

    // Every split bucket once (its largest token count), or the given token counts.
    const std::vector<int64_t> tokens = buckets > 0 ? spec.representatives(buckets) : given_tokens;
    for (int64_t T : tokens) {
      HCWARM_CHECK_ARG(T >= 1, "--tokens must be >= 1, got {}", T);
      const auto sizes = set_buffer_bytes(dims, T);
      size_t set_bytes = 0;
      for (size_t x : sizes) set_bytes += x;
      // What hc_pre must move: the residual and fn read, y, post and comb written.
      const double bytes = static_cast<double>(sizes[0] + sizes[1] + sizes[5] + sizes[6] + sizes[7]);
      const size_t nsets = rotation_count(set_bytes, b.cache_bytes, b.cuda != nullptr);
      // The split count the call runs with (the one-pass kernel's 1 where it serves the bucket).
      const int splits = spec.kernel_splits(T);
      BenchJson row{{"hidden", D},    {"tokens", T},           {"num_splits", splits}, {"bucket_splits", spec.num_splits(T)},
                    {"bytes", bytes}, {"rotation_sets", nsets}, {"rotation_bytes", nsets * set_bytes}};
      std::vector<IoSet> sets;
      try {
        sets = make_sets(*b.dev, dims, T, nsets, w, pool);
      } catch (const Error& e) {
        // Out of device memory, say: this row fails, the others still run.
        row["error"] = e.message();
        rows.push_back(row);
        if (b.text) std::cout << fmt::format("{:>5} {:>6} {:>6} {:>5} | {}\n", D, T, splits, nsets, e.message());
        continue;
      }
      Measured ms, mg, ma, mb, m2;
      // Call i reads set i (mod the count): the eager loop cycles, the graph holds one call per set.
      auto on_sets = [&](RunFn run) {
        return [&sets, T, norm = b.norm, run = std::move(run)](int i) {
          run(sets[static_cast<size_t>(i) % sets.size()].args(T, norm));
        };
      };
      const auto spec_calls = on_sets([&](const mhc::HcPreArgs& x) { spec.run(x); });
      const auto gen_calls = on_sets([&](const mhc::HcPreArgs& x) { gen.run(x); });
      const int ncalls = static_cast<int>(sets.size());
      if (t.variant != "generic") {
        ms = measure_eager(*b.dev, spec_calls, b.min_seconds, b.rt);
        if (graph_on) measure_graph(ms, *b.cuda, spec_calls, ncalls, b.graph_replays);
      }
      if (t.variant != "specialized") {
        mg = measure_eager(*b.dev, gen_calls, b.min_seconds, nullptr);
        if (graph_on) measure_graph(mg, *b.cuda, gen_calls, ncalls, b.graph_replays);
      }
      if (t.stages) {
        // The two kernels timed apart, eager (stage b reads what a wrote in the earlier call):
        // the specialized ones, or the generic ones with --variant generic.
        mhc::HcPreOp& staged = t.variant == "generic" ? gen : spec;
        ma = measure_eager(*b.dev, on_sets([&](const mhc::HcPreArgs& x) { staged.run_with_splits(x, splits, 1); }),
                           b.min_seconds / 2, nullptr);
        mb = measure_eager(*b.dev, on_sets([&](const mhc::HcPreArgs& x) { staged.run_with_splits(x, splits, 2); }),
                           b.min_seconds / 2, nullptr);
        if (splits == 1 && backend == mhc::Backend::Cuda && t.variant != "generic") {
          // The other num_splits-1 path: the two kernels when the specialized
          // column ran the one-pass kernel (the default), and vice versa.
          const bool was = spec.cuda_one_pass();
          spec.set_cuda_one_pass(!was);
          m2 = measure_eager(*b.dev, spec_calls, b.min_seconds / 2, nullptr);
          spec.set_cuda_one_pass(was);
        }
      }
      const size_t graph_calls = graph_on ? nsets : 0;
      if (ms.ok) {
        row["specialized"] = variant_json(ms, bytes, b.copy_bw, graph_calls);
        row["specialized"]["compile_s"] = ms.compile_s;
        row["specialized"]["first_call_s"] = ms.first_call_s;
      }
      if (ma.ok) row["stage_a_us"] = ma.us;
      if (mb.ok) row["stage_b_us"] = mb.us;
      if (m2.ok) row[spec.cuda_one_pass() ? "two_pass_us" : "one_pass_us"] = m2.us;
      if (mg.ok) row["generic"] = variant_json(mg, bytes, b.copy_bw, graph_calls);
      if (!ms.error.empty()) row["specialized_error"] = ms.error;
      if (!mg.error.empty()) row["generic_error"] = mg.error;
      rows.push_back(row);
      if (b.text) {
        auto us = [](const Measured& m) { return m.ok ? fmt::format("{:.1f}", m.us) : std::string("-"); };
        const bool cuda = b.cuda != nullptr;
        std::string line = fmt::format(
            "{:>5} {:>6} {:>6} {:>5} | {} | {} | {:>8} {:>9}", D, T, splits, nsets,
            variant_cell(ms, bytes, b.copy_bw, cuda, graph_on), variant_cell(mg, bytes, b.copy_bw, cuda, graph_on),
            ms.ok && mg.ok ? fmt::format("{:.2f}x", mg.us / ms.us) : "-",
            ms.compile_s >= 0 ? fmt::format("{:.3f}", ms.compile_s) : "-");
        if (t.stages) line += fmt::format(" | {:>8} {:>8} {:>8}", us(ma), us(mb), us(m2));
        std::cout << line << "\n";
        if (!ms.error.empty()) std::cout << "  specialized: " << ms.error << "\n";
        if (!ms.graph_error.empty()) std::cout << "  specialized graph: " << ms.graph_error << "\n";
        if (!mg.error.empty()) std::cout << "  generic: " << mg.error << "\n";
        if (!mg.graph_error.empty()) std::cout << "  generic graph: " << mg.graph_error << "\n";
        std::cout.flush();
      }
    }
  }
}

}  // namespace hcwarm::cli
