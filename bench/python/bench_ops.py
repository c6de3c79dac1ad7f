#!/usr/bin/env python3
"""Times hcwarm's ops from PyTorch: per-call cost beside torch.add, and hc_pre's kernels over token counts.

--part calls (op_calls.py): every public op form through hcwarm.* and torch.ops.hcwarm.*: the host
time of its first call after prewarm() and of its 100th (medians over --first-call-processes fresh
processes, one first call each), the mean host time per call beside torch.add's, and its eager and
CUDA-graph device time.

--part kernels: for each hidden size and token count: per-call GPU time of
  eager   hcwarm.hc_pre(..., out=...) in a loop over rotating input sets (>= 3x L2 in all, so
          each call reads its inputs from memory, as a model's layers do), median of --repeats;
  ops     the same loop through torch.ops.hcwarm.hc_pre (allocates its outputs);
  graph   one torch.cuda.CUDAGraph of N such calls, replayed --repeats times, replay time / N;
then effective GB/s (residual + fn read, y + post + comb written) against a ~1 GiB
device-to-device copy (bytes read + written), and the host-side cost of one Python call at
T=1 (hcwarm.hc_pre vs torch.ops.hcwarm.hc_pre). Everything is prewarmed first, so no
compile is timed. The last lines printed are the table; --json writes everything.

Run (one H200):
    python3 bench/python/bench_ops.py --json bench-ops-h200.json
    python3 bench/python/bench_ops.py --part calls --call-model dsv4-flash --call-tokens 512
    python3 bench/python/bench_ops.py --hidden 7168 --tokens 1,64,8192 --repeats 5
"""
import argparse
import datetime
import json
import math
import shlex
import statistics
import sys
import time

import torch

import hcwarm
import op_calls

PRESETS = {4096: "dsv4-flash", 7168: "dsv4-pro"}
POST_MULT = 2.0
SLEEP_CYCLES = 200_000_000  # torch.cuda._sleep: ~0.1 s at 2 GHz, far longer than the host loop it covers
COPY_BYTES = 1 << 30


def config_for(hidden):
    """The preset of that width, else a Hugging Face config dict: dsv4-flash's mHC fields at this width."""
    if hidden in PRESETS:
        return PRESETS[hidden]
    flash = hcwarm.model_config("dsv4-flash")
    cfg = {k: flash[k] for k in ("hc_mult", "hc_sinkhorn_iters", "hc_eps", "rms_norm_eps", "num_hidden_layers")}
    return dict(cfg, architectures=["DeepseekV4ForCausalLM"], hidden_size=hidden)  # config.json needs architectures


class InputSet:
    """One hc_pre call's inputs and its output buffers."""

    def __init__(self, tokens, hc, hidden, dev):
        n_mix = hc * (2 + hc)
        self.residual = torch.randn(tokens, hc, hidden, device=dev, dtype=torch.bfloat16)
        self.fn = torch.randn(n_mix, hc * hidden, device=dev) * 0.02
        self.scale = torch.full((3,), 0.5, device=dev)
        self.base = torch.randn(n_mix, device=dev) * 0.1
        self.norm_w = (1 + 0.1 * torch.randn(hidden, device=dev)).to(torch.bfloat16)
        self.out = (torch.empty(tokens, hidden, device=dev, dtype=torch.bfloat16),
                    torch.empty(tokens, hc, device=dev), torch.empty(tokens, hc, hc, device=dev))


def moved_bytes(tokens, hc, hidden):
    """What hc_pre must move at least: residual and fn read, y, post and comb written."""
    return (tokens * hc * hidden * 2 + hc * (2 + hc) * hc * hidden * 4
            + tokens * hidden * 2 + tokens * hc * 4 + tokens * hc * hc * 4)


def make_calls(kw):
    """(hcwarm.hc_pre with out=, torch.ops.hcwarm.hc_pre) as functions of an InputSet."""
    def api(s):
        return hcwarm.hc_pre(s.residual, s.fn, s.scale, s.base, s.norm_w, out=s.out, **kw)

    def ops(s):
        return torch.ops.hcwarm.hc_pre(s.residual, s.fn, s.scale, s.base, s.norm_w, kw["sinkhorn_iters"],
                                       kw["hc_eps"], kw["rms_eps"], kw["norm_eps"], POST_MULT)
    return api, ops


def events():
    return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def time_eager(call, sets, n, repeats):
    """Median over repeats of (one loop of n calls, timed by events) / n, in microseconds."""
    start, end = events()
    for s in sets:  # untimed: touch every set once
        call(s)
    torch.cuda.synchronize()
    per_call = []
    for _ in range(repeats):
        start.record()
        for i in range(n):
            call(sets[i % len(sets)])
        end.record()
        end.synchronize()
        per_call.append(start.elapsed_time(end) * 1e3 / n)
    return statistics.median(per_call)


def time_graph(call, sets, n, repeats, dev):
    """One graph of n calls over the rotating sets; median over repeats of (one replay, timed by events) / n, in microseconds."""
    return op_calls.graph_us([lambda s=sets[i % len(sets)]: call(s) for i in range(n)], dev, repeats)


def host_cost(call, sets, n, rounds=5):
    """Per-call host and end-to-end time of n back-to-back calls, in microseconds (median of rounds)."""
    busy, busy_ok, host, e2e = [], True, [], []
    sleep = getattr(torch.cuda, "_sleep", None)
    for _ in range(rounds):
        # GPU kept busy: every launch only queues, so the host time is the Python + launch cost alone
        if sleep is not None:
            torch.cuda.synchronize()
            sleep(SLEEP_CYCLES)
            slept = torch.cuda.Event()
            slept.record()
            t0 = time.perf_counter()
            for i in range(n):
                call(sets[i % len(sets)])
            t1 = time.perf_counter()
            busy_ok &= not slept.query()  # False: the GPU went idle before the host loop ended
            busy.append((t1 - t0) * 1e6 / n)
        # GPU idle at the start: no sync between calls, one at the end
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(n):
            call(sets[i % len(sets)])
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        host.append((t1 - t0) * 1e6 / n)
        e2e.append((t2 - t0) * 1e6 / n)
    return {"host_us_gpu_busy": statistics.median(busy) if busy else None, "gpu_stayed_busy": busy_ok if busy else None,
            "host_us": statistics.median(host), "e2e_us": statistics.median(e2e), "calls": n, "rounds": rounds}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hidden", default="4096,7168")
    p.add_argument("--tokens", default="1,8,64,512,2048,8192,16384")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--repeats", type=int, default=10, help="timed loops (eager) and replays (graph) per row")
    p.add_argument("--calls", type=int, default=200, help="calls per loop or graph, rounded up to a multiple of the sets")
    p.add_argument("--host-calls", type=int, default=200,
                   help="calls per host-cost round (small enough that their launches fit the launch queue)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="OUT", help="write the results here")
    p.add_argument("--part", choices=("kernels", "calls", "all"), default="all",
                   help="kernels: hc_pre over --tokens; calls: every op's first, host, eager and graph cost "
                        "beside torch.add (op_calls.py); all: both")
    p.add_argument("--call-model", default="dsv4-pro", help="calls: the model whose shapes the calls use")
    p.add_argument("--call-chunk", type=int, default=16384, help="calls: prewarm's chunked_prefill_size")
    p.add_argument("--call-tokens", type=int, default=1, help="calls: tokens per call")
    p.add_argument("--first-call-processes", type=int, default=3,
                   help="calls: fresh processes per op form, route and state (one first call each; medians reported)")
    p.add_argument("--first-call-idle-only", action="store_true",
                   help="calls: first calls right after prewarm() only, without the busy processes (200 torch.mul "
                        "calls between prewarm() and the first call), half the processes")
    p.add_argument("--first-call-warmed", action="store_true",
                   help="calls: also each form's first call after 3 calls of it right after prewarm() (how much of a "
                        "first call is the distance from its last warm call)")
    p.add_argument("--first-call-child", nargs=2, metavar=("FORM", "ROUTE"), help=argparse.SUPPRESS)
    p.add_argument("--first-call-busy", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args()


@torch.inference_mode()
def main():
    args = parse_args()
    if args.first_call_child:  # one fresh process of --part calls
        print(json.dumps(op_calls.first_call_child(args.call_model, args.call_chunk, args.call_tokens,
                                                   *args.first_call_child, args.device,
                                                   busy=args.first_call_busy)))
        return 0
    dev = torch.device(args.device)
    torch.cuda.set_device(dev)
    torch.manual_seed(args.seed)
    props = torch.cuda.get_device_properties(dev)
    result = {"command": shlex.join([sys.executable] + sys.argv),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "device": props.name, "num_sms": props.multi_processor_count, "torch": torch.__version__,
              "hcwarm": getattr(hcwarm, "__version__", None), "args": vars(args)}
    calls = op_calls.run(args, dev) if args.part in ("calls", "all") else None
    if args.part in ("kernels", "all"):
        result.update(kernels(args, dev, props))
    if calls is not None:
        result["calls"] = calls
        op_calls.print_table(calls)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2, default=str)
        print(f"wrote {args.json}")
    return 0


def kernels(args, dev, props):
    """hc_pre over --hidden x --tokens: eager, torch.ops and graph time, GB/s; host cost at T=1."""
    hiddens = [int(h) for h in args.hidden.split(",")]
    tokens_list = [int(t) for t in args.tokens.split(",")]
    l2 = props.L2_cache_size

    # prewarm every width first, with max_num_tokens covering the largest token count
    kws, prewarm = {}, {}
    for hidden in hiddens:
        cfg = config_for(hidden)
        rep = hcwarm.prewarm(cfg, chunked_prefill_size=max(tokens_list), device=dev)
        prewarm[hidden] = rep.as_dict()
        print(f"prewarm hidden {hidden}: compiled {rep.compiled}, from disk {rep.loaded_from_disk}, "
              f"{rep.seconds:.2f} s, max_num_tokens {rep.max_num_tokens}" + (f", SKIPPED: {rep.skipped}" if rep.skipped else ""))
        mc = hcwarm.model_config(cfg)
        kws[hidden] = {"sinkhorn_iters": mc["hc_sinkhorn_iters"], "hc_eps": mc["hc_eps"],
                       "rms_eps": mc["rms_norm_eps"], "norm_eps": mc["rms_norm_eps"], "post_mult": POST_MULT}
    compiles_before = hcwarm.compiles_after_ready(dev)

    # device copy bandwidth, bytes read + written
    src = torch.ones(COPY_BYTES, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    dst.copy_(src)
    start, end = events()
    copy_ms = []
    for _ in range(10):
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        copy_ms.append(start.elapsed_time(end))
    copy_gbps = 2 * COPY_BYTES / (statistics.median(copy_ms) * 1e-3) / 1e9
    del src, dst
    print(f"device copy: {copy_gbps:.0f} GB/s (read + write), L2 {l2 / 2**20:.0f} MiB")

    rows, host_rows = [], []
    for hidden in hiddens:
        hc = hcwarm.model_config(config_for(hidden))["hc_mult"]
        api, ops = make_calls(kws[hidden])
        for tokens in tokens_list:
            set_bytes = moved_bytes(tokens, hc, hidden)
            n_sets = max(2, math.ceil(3 * l2 / set_bytes))  # all sets together >= 3x L2
            sets = [InputSet(tokens, hc, hidden, dev) for _ in range(n_sets)]
            n = n_sets * math.ceil(max(args.calls, n_sets) / n_sets)  # whole passes over the sets
            eager_us = time_eager(api, sets, n, args.repeats)
            ops_us = time_eager(ops, sets, n, args.repeats)
            graph_us = time_graph(api, sets, n, args.repeats, dev)
            gbps = set_bytes / (graph_us * 1e-6) / 1e9
            row = {"hidden": hidden, "tokens": tokens, "sets": n_sets, "calls": n, "eager_us": eager_us,
                   "ops_us": ops_us, "graph_us": graph_us, "bytes": set_bytes, "graph_gbps": gbps,
                   "eager_gbps": set_bytes / (eager_us * 1e-6) / 1e9, "fraction_of_copy": gbps / copy_gbps}
            rows.append(row)
            print(f"hidden {hidden} T {tokens}: eager {eager_us:.2f} us, ops {ops_us:.2f} us, graph {graph_us:.2f} us")
            if tokens == 1:  # host cost on the T=1 sets
                for path, call in (("hcwarm.hc_pre", api), ("torch.ops.hcwarm.hc_pre", ops)):
                    host_rows.append(dict(host_cost(call, sets, args.host_calls), hidden=hidden, path=path))
            del sets
            torch.cuda.empty_cache()
    if 1 not in tokens_list:  # the host cost is at T=1 whatever --tokens says
        for hidden in hiddens:
            api, ops = make_calls(kws[hidden])
            hc = hcwarm.model_config(config_for(hidden))["hc_mult"]
            sets = [InputSet(1, hc, hidden, dev) for _ in range(math.ceil(3 * l2 / moved_bytes(1, hc, hidden)))]
            for path, call in (("hcwarm.hc_pre", api), ("torch.ops.hcwarm.hc_pre", ops)):
                host_rows.append(dict(host_cost(call, sets, args.host_calls), hidden=hidden, path=path))

    compiles = hcwarm.compiles_after_ready(dev)
    result = {"l2_bytes": l2, "prewarm": prewarm, "copy_gbps": copy_gbps, "copy_bytes": COPY_BYTES, "rows": rows,
              "host": host_rows, "compiles_after_ready": compiles, "compiles_during_bench": compiles - compiles_before}

    # the table: the last lines of output
    print(f"\nhcwarm.hc_pre, fused norm, {props.name}, L2 {l2 / 2**20:.0f} MiB, copy {copy_gbps:.0f} GB/s, "
          f"compiles after ready {compiles} ({compiles - compiles_before} while timing)")
    print(f"{'hidden':>6} {'tokens':>6} {'sets':>5} {'eager us':>9} {'ops us':>9} {'graph us':>9} "
          f"{'MB':>8} {'GB/s':>7} {'%copy':>6}")
    for r in rows:
        print(f"{r['hidden']:>6} {r['tokens']:>6} {r['sets']:>5} {r['eager_us']:>9.2f} {r['ops_us']:>9.2f} "
              f"{r['graph_us']:>9.2f} {r['bytes'] / 1e6:>8.2f} {r['graph_gbps']:>7.0f} {100 * r['fraction_of_copy']:>5.1f}%")
    print(f"host cost per call at T=1 ({args.host_calls} calls, no sync between; GB/s and %copy above use graph us)")
    print(f"{'hidden':>6} {'path':<24} {'host us (GPU busy)':>18} {'host us':>8} {'end-to-end us':>13}")
    for h in host_rows:
        busy = "n/a" if h["host_us_gpu_busy"] is None else f"{h['host_us_gpu_busy']:.2f}" + ("" if h["gpu_stayed_busy"] else "*")
        print(f"{h['hidden']:>6} {h['path']:<24} {busy:>18} {h['host_us']:>8.2f} {h['e2e_us']:>13.2f}")
    if any(h["gpu_stayed_busy"] is False for h in host_rows):
        print("* the GPU went idle before that host loop ended: raise SLEEP_CYCLES")
    return result


if __name__ == "__main__":
    sys.exit(main())
