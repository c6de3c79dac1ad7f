#!/usr/bin/env python3
"""A small PyTorch serving engine on hcwarm's mHC ops, with CUDA graphs for decode.

The model has DeepSeek V4's mHC shape and runs the whole family: the first layer's
hcwarm.hc_pre on the token embedding (T, D), hcwarm.hc_post_pre at each boundary between
sublayers (the previous post step and the next pre step in one call), hcwarm.hc_post after
the last sublayer and hcwarm.hc_head, giving (T, D). Each of the N layers' attention and FFN
sublayers is a small bf16 SwiGLU MLP, a STAND-IN for attention and MoE (those belong to the
host engine). Weights are random.

Steps: (a) hcwarm.prewarm, then hcwarm.check_coverage; (b) eager warm-up forwards on a side stream, then one CUDA
graph per decode batch size (one shared memory pool); (c) graph replay must equal an
eager forward bit for bit; (d) a seeded mixed trace through continuous batching: eager
chunked-prefill steps, and decode steps padded to the nearest captured batch size and
replayed; (e) a step-latency table, compiles after ready (must be 0), --json.
Exit code 0 when every check passes, 1 otherwise. --via sglang|vllm makes the same calls through
that engine's adapters (hcwarm.integrations: the engine's function names, arguments and shapes).

Run (one H200):
    python3 examples/torch_engine/engine.py --model dsv4-flash --json engine-flash.json
    python3 examples/torch_engine/engine.py --model dsv4-pro --check-capture-error
    python3 examples/torch_engine/engine.py --via vllm
"""
import argparse
import datetime
import json
import math
import random
import shlex
import sys
import warnings
from collections import deque
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

import hcwarm
from mhc_calls import VIA

VOCAB = 1024
MLP_WIDTH = 256              # stand-in sublayer width: small, so the mHC ops stay visible in step times
PROMPT_LEN = (16, 1500)      # trace: prompt tokens per request, uniform
OUTPUT_LEN = (4, 64)         # trace: output tokens per request, uniform
ARRIVAL_MEAN_STEPS = 2.0     # trace: mean gap between arrivals, in engine steps (keeps prefill and decode mixed)
CHECK_HIDDEN = 2048          # --check-capture-error: a hidden size that no preset warms


# ---------------------------------------------------------------- model

class MhcSublayer(nn.Module):
    """One mHC-wrapped sublayer: its hc_pre parameters (with its RMSNorm weight) and the stand-in MLP."""

    def __init__(self, hidden, hc, gen):
        super().__init__()
        n_mix = hc * (2 + hc)
        self.register_buffer("fn", torch.randn(n_mix, hc * hidden, generator=gen) * 0.02)
        self.register_buffer("scale", 0.5 + 0.05 * torch.randn(3, generator=gen))
        self.register_buffer("base", torch.randn(n_mix, generator=gen) * 0.1)
        self.register_buffer("norm_w", (1 + 0.1 * torch.randn(hidden, generator=gen)).to(torch.bfloat16))
        # STAND-IN for attention / MoE: a bf16 SwiGLU MLP, scaled to keep activations O(1)
        self.register_buffer("w_in", (torch.randn(hidden, 2 * MLP_WIDTH, generator=gen) / hidden ** 0.5).to(torch.bfloat16))
        self.register_buffer("w_out", (torch.randn(MLP_WIDTH, hidden, generator=gen) / MLP_WIDTH ** 0.5).to(torch.bfloat16))

    def pre_params(self):
        return self.fn, self.scale, self.base, self.norm_w

    def forward(self, y):
        gate, up = (y @ self.w_in).chunk(2, dim=-1)
        return (F.silu(gate) * up) @ self.w_out


class DecoderLayer(nn.Module):
    def __init__(self, hidden, hc, gen):
        super().__init__()
        self.attn = MhcSublayer(hidden, hc, gen)
        self.ffn = MhcSublayer(hidden, hc, gen)


class MhcStack(nn.Module):
    """The whole mHC family: the first layer's hc_pre on the token embedding, hc_post_pre at every
    sublayer boundary, hc_post after the last sublayer, hc_head; returns (T, D) bf16 (what the final
    RMSNorm and the LM head would take)."""

    def __init__(self, hidden, hc, layers, seed, calls):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)  # CPU generator: same weights on any device
        self.hc = hc
        self.calls = calls  # how the mHC ops are called: mhc_calls.Direct, ViaSGLang or ViaVLLM
        self.register_buffer("embed", torch.randn(VOCAB, hidden, generator=gen).to(torch.bfloat16))
        self.layers = nn.ModuleList(DecoderLayer(hidden, hc, gen) for _ in range(layers))
        self.register_buffer("head_fn", torch.randn(hc, hc * hidden, generator=gen) * 0.02)
        self.register_buffer("head_scale", 0.5 + 0.05 * torch.randn(1, generator=gen))
        self.register_buffer("head_base", torch.randn(hc, generator=gen) * 0.1)

    def forward(self, ids):
        calls = self.calls
        subs = [s for layer in self.layers for s in (layer.attn, layer.ffn)]
        residual, y, post, comb = calls.first(self.embed[ids], *subs[0].pre_params())
        for sub, nxt in zip(subs, subs[1:]):
            residual, y, post, comb = calls.boundary(sub(y), residual, post, comb, *nxt.pre_params())
        residual = calls.last(subs[-1](y), residual, post, comb)
        return calls.head(residual, self.head_fn, self.head_scale, self.head_base)


# ---------------------------------------------------------------- CUDA graphs

class DecodeGraphs:
    """One CUDA graph per decode batch size, all in one memory pool."""

    def __init__(self, model, sizes, dev):
        self.sizes = sorted(sizes)
        self.static_in = {bs: torch.zeros(bs, dtype=torch.long, device=dev) for bs in self.sizes}
        self.static_out, self.graphs = {}, {}
        # torch requires warm-up forwards on a side stream before capture (lazy init, allocator state)
        side = torch.cuda.Stream(dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(side):
            for bs in self.sizes:
                model(self.static_in[bs])
        torch.cuda.current_stream(dev).wait_stream(side)
        pool = torch.cuda.graph_pool_handle()
        for bs in reversed(self.sizes):  # largest first, so smaller graphs reuse its pool blocks
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=pool):
                self.static_out[bs] = model(self.static_in[bs])
            self.graphs[bs] = graph

    def padded(self, n):
        return next(bs for bs in self.sizes if bs >= n)

    def run(self, ids):
        """Replays the smallest graph that fits len(ids) tokens; returns the first len(ids) rows."""
        n = ids.numel()
        bs = self.padded(n)
        self.static_in[bs][:n].copy_(ids)
        self.static_in[bs][n:].zero_()  # pad slots: token 0, their rows are ignored
        self.graphs[bs].replay()
        return self.static_out[bs][:n]


def in_chain(exc, cls):
    """The first exception of type cls in exc's __cause__/__context__ chain, or None."""
    while exc is not None:
        if isinstance(exc, cls):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def check_capture_error(dev):
    """Capture hc_pre at a hidden size nothing has warmed: expect NotWarmedError and a clean abort."""
    hc, tokens = 4, 8
    res = torch.randn(tokens, hc, CHECK_HIDDEN, device=dev).to(torch.bfloat16)
    fn = torch.randn(hc * (2 + hc), hc * CHECK_HIDDEN, device=dev) * 0.02
    scale = torch.full((3,), 0.5, device=dev)
    base = torch.zeros(hc * (2 + hc), device=dev)
    norm_w = torch.ones(CHECK_HIDDEN, dtype=torch.bfloat16, device=dev)
    graph, side = torch.cuda.CUDAGraph(), torch.cuda.Stream(dev)
    raised = other = end_error = None
    hcwarm.get_context(dev)  # create hcwarm's device context now: its setup allocates, which capture forbids
    torch.cuda.synchronize(dev)
    # capture by hand rather than with torch.cuda.graph, so the capture is ended whatever hc_pre did
    with torch.cuda.stream(side), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Gg]raph is empty.*")  # expected: nothing was captured
        graph.capture_begin()
        try:
            hcwarm.hc_pre(res, fn, scale, base, norm_w)
        except hcwarm.NotWarmedError as e:
            raised = e
        except Exception as e:  # anything else is a failed check, but the capture must still end
            other = e
        finally:
            try:
                graph.capture_end()  # raises if hc_pre left the capture invalidated; the stream still leaves capture mode
            except RuntimeError as e:
                end_error = e
    graph.reset()                # drop the partial graph and its private pool
    torch.cuda.synchronize(dev)  # a leftover CUDA error shows up here, not in a later step
    still_capturing = torch.cuda.is_current_stream_capturing()
    with torch.cuda.stream(side):
        still_capturing = still_capturing or torch.cuda.is_current_stream_capturing()
    ok = raised is not None and not still_capturing
    print(f"capture check (hidden {CHECK_HIDDEN}, not warmed):")
    print(f"  NotWarmedError: {raised}" if raised else f"  no NotWarmedError; got: {other!r}")
    if end_error is not None:
        print(f"  capture_end raised (handled): {str(end_error).splitlines()[0]}")
    print(f"  stream still capturing afterwards: {still_capturing}  -> {'ok' if ok else 'FAILED'}")
    return {"ok": ok, "hidden": CHECK_HIDDEN, "not_warmed_error": str(raised) if raised else None,
            "other_error": repr(other) if other else None,
            "capture_end_error": str(end_error) if end_error else None, "still_capturing": still_capturing}


def check_graphs(model, graphs, gen, dev):
    """Fresh random ids through each graph and through an eager forward: the outputs must be equal."""
    rows = []
    for bs in graphs.sizes:
        ids = torch.randint(0, VOCAB, (bs,), device=dev, generator=gen)
        got = graphs.run(ids)
        want = model(ids)
        equal = torch.equal(got, want)
        diff = 0.0 if equal else (got.float() - want.float()).abs().max().item()
        rows.append({"batch_size": bs, "equal": equal, "max_abs_diff": diff})
    return rows


# ---------------------------------------------------------------- trace replay

@dataclass
class Request:
    arrival: int       # engine step at which it arrives
    prompt_left: int
    output_left: int


def make_trace(n, seed):
    rng = random.Random(seed)
    clock, reqs = 0.0, []
    for _ in range(n):
        clock += rng.expovariate(1.0 / ARRIVAL_MEAN_STEPS)
        reqs.append(Request(int(clock), rng.randint(*PROMPT_LEN), rng.randint(*OUTPUT_LEN)))
    return reqs


def replay_trace(model, graphs, reqs, chunk, gen, dev):
    """Continuous batching; prefill and decode steps alternate while both have work. Returns per-step records."""
    waiting, prefilling, decoding = deque(reqs), deque(), []
    max_running = graphs.sizes[-1]  # a decode batch must fit the largest graph
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    steps, clock, last = [], 0, "decode"
    while waiting or prefilling or decoding:
        while waiting and waiting[0].arrival <= clock and len(prefilling) + len(decoding) < max_running:
            prefilling.append(waiting.popleft())
        if not prefilling and not decoding:
            clock = waiting[0].arrival  # idle: jump to the next arrival
            continue
        if prefilling and (last == "decode" or not decoding):
            kind, n, budget = "prefill", 0, chunk
            while prefilling and budget > 0:  # one chunk may hold the tails and heads of several prompts
                r = prefilling[0]
                take = min(r.prompt_left, budget)
                r.prompt_left -= take
                budget -= take
                n += take
                if r.prompt_left == 0:
                    decoding.append(prefilling.popleft())
            ids = torch.randint(0, VOCAB, (n,), device=dev, generator=gen)
            start.record()
            model(ids)
            end.record()
            padded = n
        else:
            kind, n = "decode", len(decoding)
            ids = torch.randint(0, VOCAB, (n,), device=dev, generator=gen)
            start.record()
            graphs.run(ids)
            end.record()
            padded = graphs.padded(n)
            for r in decoding:
                r.output_left -= 1
            decoding = [r for r in decoding if r.output_left > 0]
        end.synchronize()
        steps.append({"kind": kind, "tokens": n, "padded": padded, "ms": start.elapsed_time(end)})
        clock, last = clock + 1, kind
    return steps


def percentile(values, p):
    """Nearest-rank percentile of a non-empty list."""
    v = sorted(values)
    return v[max(0, math.ceil(p / 100 * len(v)) - 1)]


def latency_stats(steps):
    out = {}
    for name, sel in (("all", steps), ("prefill", [s for s in steps if s["kind"] == "prefill"]),
                      ("decode", [s for s in steps if s["kind"] == "decode"])):
        ms = [s["ms"] for s in sel]
        out[name] = {"steps": len(ms), "p50_ms": percentile(ms, 50) if ms else None,
                     "p99_ms": percentile(ms, 99) if ms else None, "max_ms": max(ms) if ms else None}
    return out


# ---------------------------------------------------------------- main

def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="dsv4-flash", help="dsv4-flash | dsv4-pro | path to config.json")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--chunked-prefill-size", type=int, default=2048)
    p.add_argument("--decode-batch-sizes", default="1,2,4,8,16,32,64")
    p.add_argument("--requests", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="OUT", help="write the results here")
    p.add_argument("--check-capture-error", action="store_true",
                   help="first show that capturing an unwarmed hc_pre raises hcwarm.NotWarmedError")
    p.add_argument("--via", choices=["sglang", "vllm"],
                   help="make the model's mHC calls through that engine's adapters (hcwarm.integrations)")
    return p.parse_args()


@torch.inference_mode()
def main():
    args = parse_args()
    dev = torch.device(args.device)
    torch.cuda.set_device(dev)
    sizes = sorted({int(s) for s in args.decode_batch_sizes.split(",")})
    if sizes[-1] > args.chunked_prefill_size:
        sys.exit(f"decode batch size {sizes[-1]} exceeds --chunked-prefill-size {args.chunked_prefill_size}: prewarm would not cover it")
    result = {"command": shlex.join([sys.executable] + sys.argv),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "torch": torch.__version__, "device": torch.cuda.get_device_name(dev), "args": vars(args)}
    ok = True

    if args.check_capture_error:  # before prewarm: nothing is loaded yet
        result["capture_error_check"] = check_capture_error(dev)
        ok &= result["capture_error_check"]["ok"]

    # (a) prewarm every split bucket this model and chunk size can meet
    cfg = hcwarm.model_config(args.model)
    hidden, hc = cfg["hidden_size"], cfg["hc_mult"]
    report = hcwarm.prewarm(args.model, chunked_prefill_size=args.chunked_prefill_size, device=dev)
    print(f"prewarm {args.model} (hidden {hidden}, hc {hc}):" + (f" SKIPPED: {report.skipped}" if report.skipped else ""))
    for name in ("keys", "compiled", "loaded_from_disk", "memory_hits", "seconds", "max_num_tokens", "num_sms", "token_counts"):
        print(f"  {name}: {getattr(report, name)}")
    result["prewarm"] = report.as_dict()
    # every op of the family at every split bucket, with compiling switched off
    coverage = hcwarm.check_coverage(dev, raise_on_miss=False)
    print(f"coverage check: {coverage.calls} calls at token counts {coverage.token_counts}: "
          + ("ok" if coverage.ok else "MISSED " + "; ".join(coverage.missing)))
    result["coverage"] = {"calls": coverage.calls, "token_counts": coverage.token_counts, "missing": coverage.missing}
    ok &= coverage.ok

    hc_kwargs = {"sinkhorn_iters": cfg["hc_sinkhorn_iters"], "hc_eps": cfg["hc_eps"],
                 "rms_eps": cfg["rms_norm_eps"], "norm_eps": cfg["rms_norm_eps"]}  # the same values prewarm used
    model = MhcStack(hidden, hc, args.layers, args.seed, VIA[args.via](hc, hc_kwargs)).to(dev)
    if args.via:
        print(f"mHC calls: through hcwarm.integrations.{args.via} (that engine's functions and shapes)")
    gen = torch.Generator(device=dev).manual_seed(args.seed)

    # (b) capture; a NotWarmedError here means prewarm missed a bucket (torch.cuda.graph may wrap it)
    try:
        graphs = DecodeGraphs(model, sizes, dev)
    except Exception as e:
        nw = in_chain(e, hcwarm.NotWarmedError)
        if nw is None:
            raise
        print(f"decode graph capture failed: {nw}")
        return 1
    print(f"captured {len(sizes)} decode graphs: batch sizes {sizes}")

    # (c) graph == eager
    result["graph_check"] = check_graphs(model, graphs, gen, dev)
    graph_ok = all(r["equal"] for r in result["graph_check"])
    ok &= graph_ok

    # (d) the trace
    steps = replay_trace(model, graphs, make_trace(args.requests, args.seed), args.chunked_prefill_size, gen, dev)
    result["steps"] = steps
    result["latency"] = latency_stats(steps)
    result["compiles_after_ready"] = hcwarm.compiles_after_ready(dev)
    result["background_compiles_after_ready"] = hcwarm.background_compiles_after_ready(dev)
    ok &= result["compiles_after_ready"] == 0 and result["background_compiles_after_ready"] == 0
    result["ok"] = bool(ok)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2, default=str)

    # (e) report
    print(f"\n{args.model}, {args.layers} layers, {args.requests} requests, chunk {args.chunked_prefill_size}, {torch.cuda.get_device_name(dev)}")
    print(f"{'steps':<8} {'count':>6} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9}")
    for name, s in result["latency"].items():
        if s["steps"]:
            print(f"{name:<8} {s['steps']:>6} {s['p50_ms']:>9.3f} {s['p99_ms']:>9.3f} {s['max_ms']:>9.3f}")
    bad = [r for r in result["graph_check"] if not r["equal"]]
    print("graph == eager: " + ("equal for batch sizes " + ",".join(str(bs) for bs in sizes) if not bad else
          "MISMATCH " + ", ".join(f"bs {r['batch_size']} max abs diff {r['max_abs_diff']:g}" for r in bad)))
    if args.check_capture_error:
        print(f"capture check: {'NotWarmedError raised, capture cleaned up' if result['capture_error_check']['ok'] else 'FAILED'}")
    print(f"compiles after ready: {result['compiles_after_ready']} (background: "
          f"{result['background_compiles_after_ready']})")
    if args.json:
        print(f"wrote {args.json}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
