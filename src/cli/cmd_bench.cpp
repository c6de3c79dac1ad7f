// `hcwarm bench`, and its `op` subcommand's options and help: microseconds per
// hc_pre call, eager and under CUDA-graph replay (as serving engines run
// decode), GB/s and the fraction of the device's measured copy bandwidth,
// specialized (JIT) and generic (ahead of time) kernels side by side, and the
// compile time of each specialization. The run is in cli/bench_op.hpp, the
// hc_pre table in cli/bench_pre_table.hpp, the timing helpers in
// cli/bench_timing.hpp, the other ops' tables (--op) in cli/bench_family.hpp.
#include <memory>

#include "cli/bench_op.hpp"
#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "core/limits.hpp"

namespace hcwarm::cli {
namespace {

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
  auto o = std::make_shared<BenchOpOptions>();
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
  op->callback([&ctx, o] { run_bench_op(ctx, *o); });
}

}  // namespace hcwarm::cli
