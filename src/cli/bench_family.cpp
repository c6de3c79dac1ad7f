#include "cli/bench_family.hpp"

#include <fmt/format.h>

#include <functional>
#include <iostream>
#include <memory>
#include <string>

#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/hc_head_cuda.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "jit/jit_runtime.hpp"
#include "mhc/hc_head_op.hpp"
#include "mhc/hc_post_op.hpp"
#include "mhc/hc_pre_op.hpp"

namespace hcwarm::cli {
namespace {

constexpr int kHc = 4;  // DeepSeek V4's hc_mult, the one the CUDA kernels take

// One rotation set: every buffer a column of the op's table reads or writes.
// x: the previous sublayer's output (post-pre) or the embedding (pre-embed).
struct FamilySet {
  DeviceBuffer residual, x, prev_post, prev_comb, new_residual;
  DeviceBuffer fn, scale, base, norm_weight, y, post, comb;
  DeviceBuffer head_fn, head_scale, head_base;
};

struct Sizes {
  size_t residual, x, gates, matrix, fn, weights, head_fn, y;
};
Sizes sizes_of(FamilyOp op, int D, int64_t T) {
  const auto t = static_cast<size_t>(T), d = static_cast<size_t>(D), hc = size_t{kHc};
  const size_t mix = hc * (2 + hc);
  return {t * hc * d * 2,
          op == FamilyOp::Head ? 0 : t * d * 2,
          t * hc * 4,
          t * hc * hc * 4,
          mix * hc * d * 4,
          (3 + mix) * 4 + d * 2,
          op == FamilyOp::Head ? hc * hc * d * 4 : 0,
          t * d * 2};
}
size_t set_bytes(FamilyOp op, const Sizes& s) {
  const size_t pre = s.residual + s.fn + s.weights + s.y + s.gates + s.matrix;  // what an hc_pre column needs
  switch (op) {
    case FamilyOp::PostPre: return pre + s.x + s.gates + s.matrix + s.residual;
    case FamilyOp::Head: return pre + s.head_fn + (1 + kHc) * 4;
    case FamilyOp::PreEmbed: return pre + s.x;
  }
  return pre;
}

// Host values every set is filled from, drawn once per hidden size.
struct FamilyWeights {
  std::vector<float> fn, scale, base, head_fn, head_scale, head_base, gates, matrix;
  std::vector<bf16> norm;
};
FamilyWeights draw_weights(int D, int64_t max_tokens, std::mt19937_64& rng) {
  std::normal_distribution<float> n01;
  std::uniform_real_distribution<float> gate(0.05f, 1.95f), mix(0.01f, 0.49f);
  const size_t k = size_t{kHc} * static_cast<size_t>(D), m = size_t{kHc} * (2 + kHc);
  FamilyWeights w{std::vector<float>(m * k), std::vector<float>(3), std::vector<float>(m),
                  std::vector<float>(size_t{kHc} * k), std::vector<float>(1), std::vector<float>(kHc),
                  std::vector<float>(static_cast<size_t>(max_tokens) * kHc),
                  std::vector<float>(static_cast<size_t>(max_tokens) * kHc * kHc),
                  std::vector<bf16>(static_cast<size_t>(D))};
  for (auto* v : {&w.fn, &w.head_fn}) {
    for (auto& x : *v) x = 1e-3f * n01(rng);
  }
  for (auto* v : {&w.scale, &w.base, &w.head_scale, &w.head_base}) {
    for (auto& x : *v) x = 0.1f * n01(rng);
  }
  for (auto& x : w.gates) x = gate(rng);
  for (auto& x : w.matrix) x = mix(rng);
  for (auto& x : w.norm) x = bf16::from_float(1.0f + 0.1f * n01(rng));
  return w;
}

DeviceBuffer filled(Device& dev, const void* src, size_t bytes) {
  DeviceBuffer b(dev, bytes);
  if (bytes > 0) dev.copy_from_host(b.get(), src, bytes);
  return b;
}

std::vector<FamilySet> make_family_sets(Device& dev, FamilyOp op, int D, int64_t T, size_t count,
                                        const FamilyWeights& w, ResidualPool& pool) {
  const Sizes s = sizes_of(op, D, T);
  std::vector<bf16> residual(s.residual / 2), x(s.x / 2);
  std::vector<FamilySet> sets;
  sets.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    FamilySet f;
    pool.fill(residual);
    f.residual = filled(dev, residual.data(), s.residual);
    f.fn = filled(dev, w.fn.data(), s.fn);
    f.scale = filled(dev, w.scale.data(), 3 * sizeof(float));
    f.base = filled(dev, w.base.data(), w.base.size() * sizeof(float));
    f.norm_weight = filled(dev, w.norm.data(), w.norm.size() * sizeof(bf16));
    f.y = DeviceBuffer(dev, s.y);
    f.post = DeviceBuffer(dev, s.gates);
    f.comb = DeviceBuffer(dev, s.matrix);
    if (op != FamilyOp::Head) {
      pool.fill(x);
      f.x = filled(dev, x.data(), s.x);
    }
    if (op == FamilyOp::PostPre) {
      f.prev_post = filled(dev, w.gates.data(), s.gates);
      f.prev_comb = filled(dev, w.matrix.data(), s.matrix);
      f.new_residual = DeviceBuffer(dev, s.residual);
    }
    if (op == FamilyOp::Head) {
      f.head_fn = filled(dev, w.head_fn.data(), s.head_fn);
      f.head_scale = filled(dev, w.head_scale.data(), sizeof(float));
      f.head_base = filled(dev, w.head_base.data(), kHc * sizeof(float));
    }
    sets.push_back(std::move(f));
  }
  return sets;
}

// hc_pre's arguments on a set: the residual streams (or `residual` instead),
// the embedding, or the fused boundary (new residual to its own buffer, so
// that repeated calls on a set read the same inputs; or, in_place, over the
// residual: each call then reads the previous one's new residual).
mhc::HcPreArgs pre_args(const FamilySet& f, int64_t T, bool norm, mhc::HcPreInput input,
                        const DeviceBuffer* residual = nullptr, bool in_place = false) {
  mhc::HcPreArgs a;
  a.num_tokens = T;
  a.input = input;
  a.residual = (input == mhc::HcPreInput::Embed ? f.x : residual != nullptr ? *residual : f.residual).as<bf16>();
  a.fn = f.fn.as<float>();
  a.scale = f.scale.as<float>();
  a.base = f.base.as<float>();
  a.norm_weight = norm ? f.norm_weight.as<bf16>() : nullptr;
  a.y = f.y.as<bf16>();
  a.post = f.post.as<float>();
  a.comb = f.comb.as<float>();
  if (input == mhc::HcPreInput::Post) {
    a.x = f.x.as<bf16>();
    a.prev_post = f.prev_post.as<float>();
    a.prev_comb = f.prev_comb.as<float>();
    a.new_residual = (in_place ? f.residual : f.new_residual).as<bf16>();
  }
  return a;
}

// A column of the table: its name, the bytes it must move at least (%copy), and one call on a set.
struct Column {
  std::string name;
  double bytes = 0;
  std::function<void(const FamilySet&)> call;
  bool jit_timed = false;  // its first call's compile is reported
};

// The last column: head / pre for the head, else the reference over the op (post+pre / fused, pre / embed).
const char* ratio_label(FamilyOp op) {
  return op == FamilyOp::PostPre ? "pair/fused" : op == FamilyOp::Head ? "head/pre" : "pre/embed";
}

}  // namespace

const char* to_string(FamilyOp op) {
  return op == FamilyOp::PostPre ? "post-pre" : op == FamilyOp::Head ? "head" : "pre-embed";
}

void run_family_bench(const FamilyBench& b, FamilyOp op, const std::vector<int>& hidden,
                      const std::vector<int64_t>& tokens, int64_t buckets, std::mt19937_64& rng, ResidualPool& pool,
                      BenchJson& rows) {
  Device& dev = *b.dev;
  const bool cuda = b.cuda != nullptr;
  const bool graph_on = cuda && b.graph_replays > 0;
  const mhc::Backend backend = cuda ? mhc::Backend::Cuda : mhc::Backend::Cpu;
  const std::string arch = cuda ? b.cuda->arch() : std::string("sm_90a");
  const auto threads = cuda ? nullptr : std::make_shared<ThreadPool>();
  bool header_done = false;
  for (const int D : hidden) {
    const mhc::MhcDims dims{kHc, D};
    // One op per input kind: each keeps its own kernels and workspace.
    auto pre_op = [&](mhc::Variant v) {
      auto p = std::make_unique<mhc::HcPreOp>(backend, dims, mhc::MhcConstants{}, b.num_sms,
                                              v == mhc::Variant::Generic ? nullptr : b.rt, dev, v);
      p->set_cuda_fast_finish(b.fast_finish);
      p->set_tiered(false);  // the specialized kernels from the first call on
      p->set_cuda_one_pass(b.one_pass);
      return p;
    };
    const auto pre = pre_op(mhc::Variant::Specialized);
    const auto other = pre_op(mhc::Variant::Specialized);
    const auto other_gen = pre_op(mhc::Variant::Generic);
    mhc::HcPostOp post(dims, dev, b.rt, arch, threads);
    post.set_tiered(false);
    mhc::HcHeadOp head(dims, mhc::MhcConstants{}, dev, b.rt, arch, threads);
    head.set_cuda_one_pass(b.one_pass);
    // The head's two CUDA kernels forced at every T, beside the dispatch (where the shape has both).
    const bool head_kernels = cuda && cuda::head_has_one_pass(kHc, D);
    mhc::HcHeadOp head_one_pass(dims, mhc::MhcConstants{}, dev, b.rt, arch, threads);
    head_one_pass.set_cuda_one_pass_min_tokens(1);
    mhc::HcHeadOp head_cluster(dims, mhc::MhcConstants{}, dev, b.rt, arch, threads);
    head_cluster.set_cuda_one_pass(false);

    const std::vector<int64_t> ts = buckets > 0 ? pre->representatives(buckets) : tokens;
    int64_t max_t = 1;
    for (const int64_t T : ts) {
      HCWARM_CHECK_ARG(T >= 1, "--tokens must be >= 1, got {}", T);
      max_t = std::max(max_t, T);
    }
    const FamilyWeights w = draw_weights(D, max_t, rng);
    for (const int64_t T : ts) {
      const Sizes s = sizes_of(op, D, T);
      const double pre_bytes = static_cast<double>(s.residual + s.fn + s.y + s.gates + s.matrix);
      const bool n = b.norm;
      std::vector<Column> cols;
      if (op == FamilyOp::PostPre) {
        // The fused op's least traffic: residual, x, prev_post, prev_comb and fn read; new residual, y, post, comb
        // written. The unfused pair does the same work (and moves the new residual twice more).
        const double fused = pre_bytes + static_cast<double>(s.x + s.gates + s.matrix + s.residual);
        cols.push_back({"fused", fused,
                        [&, T, n](const FamilySet& f) {
                          other->run(pre_args(f, T, n, mhc::HcPreInput::Post, nullptr, b.in_place));
                        },
                        true});
        cols.push_back({"fused gen", fused, [&, T, n](const FamilySet& f) {
                          other_gen->run(pre_args(f, T, n, mhc::HcPreInput::Post, nullptr, b.in_place));
                        }});
        cols.push_back({"post+pre", fused, [&, T, n](const FamilySet& f) {
                          const DeviceBuffer& out = b.in_place ? f.residual : f.new_residual;
                          post.run(T, f.x.as<bf16>(), f.residual.as<bf16>(), f.prev_post.as<float>(),
                                   f.prev_comb.as<float>(), out.as<bf16>());
                          pre->run(pre_args(f, T, n, mhc::HcPreInput::Residual, &out));
                        }});
      } else if (op == FamilyOp::Head) {
        const double head_bytes = static_cast<double>(s.residual + s.head_fn + s.y);
        auto head_column = [&, T](const char* name, mhc::HcHeadOp& op, bool jit_timed) {
          cols.push_back({name, head_bytes,
                          [&op, T](const FamilySet& f) {
                            op.run({T, f.residual.as<bf16>(), f.head_fn.as<float>(), f.head_scale.as<float>(),
                                    f.head_base.as<float>(), f.y.as<bf16>()});
                          },
                          jit_timed});
        };
        head_column("head", head, true);
        if (head_kernels) {
          head_column("head 1pass", head_one_pass, false);
          head_column("head cluster", head_cluster, false);
        }
        cols.push_back({"pre", pre_bytes,
                        [&, T, n](const FamilySet& f) { pre->run(pre_args(f, T, n, mhc::HcPreInput::Residual)); }});
      } else {
        const double embed = pre_bytes - static_cast<double>(s.residual - s.x);
        cols.push_back({"embed", embed,
                        [&, T, n](const FamilySet& f) { other->run(pre_args(f, T, n, mhc::HcPreInput::Embed)); },
                        true});
        cols.push_back({"embed gen", embed, [&, T, n](const FamilySet& f) {
                          other_gen->run(pre_args(f, T, n, mhc::HcPreInput::Embed));
                        }});
        cols.push_back({"pre", pre_bytes,
                        [&, T, n](const FamilySet& f) { pre->run(pre_args(f, T, n, mhc::HcPreInput::Residual)); }});
      }
      if (b.text && !header_done) {
        // Two lines: the column names over their cells (variant_cell: 33 characters), then the figures' names.
        std::string names = fmt::format("{:>5} {:>6} {:>6} {:>5}", "", "", "", "");
        std::string h = fmt::format("{:>5} {:>6} {:>6} {:>5}", "D", "T", "splits", "sets");
        for (const Column& c : cols) {
          names += fmt::format(" | {:^33}", c.name);
          h += fmt::format(" | {:>9} {:>6} {:>9} {:>6}", "eager us", "%copy", "graph us", "%copy");
        }
        std::cout << fmt::format("\n{}: {} beside {}\n", to_string(op), cols.front().name, cols.back().name) << names
                  << fmt::format(" | {:>10}\n", "") << h << fmt::format(" | {:>10}\n", ratio_label(op));
        header_done = true;
      }
      const size_t nsets = rotation_count(set_bytes(op, s), b.cache_bytes, cuda);
      const int splits = pre->num_splits(T);
      BenchJson row{{"op", to_string(op)},  {"hidden", D},          {"tokens", T},
                    {"num_splits", splits}, {"rotation_sets", nsets}, {"columns", BenchJson::object()}};
      std::vector<FamilySet> sets;
      try {
        sets = make_family_sets(dev, op, D, T, nsets, w, pool);
      } catch (const Error& e) {
        row["error"] = e.message();
        rows.push_back(row);
        if (b.text) std::cout << fmt::format("{:>5} {:>6} {:>6} {:>5} | {}\n", D, T, splits, nsets, e.message());
        continue;
      }
      std::vector<Measured> ms(cols.size());
      std::string line = fmt::format("{:>5} {:>6} {:>6} {:>5}", D, T, splits, nsets);
      for (size_t i = 0; i < cols.size(); ++i) {
        // Call i reads set i (mod the count): the eager loop cycles, the graph holds one call per set.
        const auto calls = [&sets, &c = cols[i]](int k) { c.call(sets[static_cast<size_t>(k) % sets.size()]); };
        ms[i] = measure_eager(dev, calls, b.min_seconds, cols[i].jit_timed ? b.rt : nullptr);
        if (graph_on) measure_graph(ms[i], *b.cuda, calls, static_cast<int>(sets.size()), b.graph_replays);
        BenchJson j = variant_json(ms[i], cols[i].bytes, b.copy_bw, graph_on ? nsets : 0);
        j["bytes"] = cols[i].bytes;
        if (cols[i].jit_timed) j["compile_s"] = ms[i].compile_s;
        if (!ms[i].error.empty()) j["error"] = ms[i].error;
        row["columns"][cols[i].name] = j;
        line += " | " + variant_cell(ms[i], cols[i].bytes, b.copy_bw, cuda, graph_on);
      }
      // ratio_label: the last column over the first, or the first over the last for the head.
      const Measured& first = ms.front();
      const Measured& last = ms.back();
      const bool head_table = op == FamilyOp::Head;
      const bool ratio_ok = first.ok && last.ok;
      const double ratio = ratio_ok ? (head_table ? first.us / last.us : last.us / first.us) : 0;
      row["ratio"] = ratio_ok ? BenchJson(ratio) : BenchJson();
      rows.push_back(row);
      if (b.text) {
        std::cout << line << fmt::format(" | {:>10}\n", ratio_ok ? fmt::format("{:.2f}x", ratio) : std::string("-"));
        for (size_t i = 0; i < cols.size(); ++i) {
          if (!ms[i].error.empty()) std::cout << "  " << cols[i].name << ": " << ms[i].error << "\n";
          if (!ms[i].graph_error.empty()) std::cout << "  " << cols[i].name << " graph: " << ms[i].graph_error << "\n";
        }
        std::cout.flush();
      }
    }
  }
}

}  // namespace hcwarm::cli
