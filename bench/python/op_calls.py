"""bench_ops.py --part calls: what each public op costs an engine per call, beside torch.add.

For every op form an engine calls (hc_pre with and without the norm weight and on the first
layer's embedding, hc_post, hc_post_pre, hc_head), through hcwarm.* and torch.ops.hcwarm.*,
on the model's shapes at --call-tokens tokens:
  first   host time of the first call after prewarm(), in a fresh process per form and route that
          made the model's tensors first, as an engine does (and of its 100th call there), median over
          --first-call-processes such processes (a single first call is one sample); torch.add's
          first and 100th call in the same position, for reference, once as it comes and once
          "warmed" (3 calls and a synchronize after prewarm(), the treatment prewarm() gives hcwarm's
          entry points, with nothing run in between; with --first-call-warmed, every form as well);
          and "busy": the first call in
          another fresh process that ran 200 torch.mul calls between prewarm() and it (a process
          that is serving, not one that has just been idle: separates hcwarm's first-call cost
          from the slowness of any call after idle time); "flushed": in the same process after
          the 100 calls, a call after the GPU went idle and 64 MiB were written over the CPU's
          caches (median of 3): what a call costs with nothing warm but no one-time set-up left,
          the baseline a first call is measured against beside the hot 100th;
  host    mean host time per call of --host-calls back-to-back calls (no sync inside the loop),
          with torch.add on a small CUDA tensor measured the same way;
  eager   device time per call of queued calls (the GPU held by torch.cuda._sleep while the host
          queues them, so host cost does not show), events around the calls;
  graph   device time per call of a CUDA graph of the same calls, replayed.
"""
import json
import os
import statistics
import subprocess
import sys
import time

import torch

import hcwarm

POST_MULT = 2.0
FLUSH_BYTES = 64 << 20  # more than the host's last-level cache
SLEEP_CYCLES = 400_000_000  # ~0.2 s at 2 GHz: covers the host loop that queues the timed calls
FORMS = ("hc_pre", "hc_pre_no_norm", "hc_pre_embedding", "hc_post", "hc_post_pre", "hc_head")
ROUTES = ("hcwarm", "torch.ops")
WARMED = ".warmed"  # a form's suffix: called 3 times right after prewarm(), before its timed calls
CHILD_TIMES = ("first_us", "call100_us", "median_2_100_us", "flushed_us")  # a first-call child's host times


class Inputs:
    """One call's tensors for every form (a model's shapes, random values)."""

    def __init__(self, model, tokens, dev):
        mc = hcwarm.model_config(model)
        hc, d = mc["hc_mult"], mc["hidden_size"]
        mix = hc * (2 + hc)
        self.consts = (mc["hc_sinkhorn_iters"], mc["hc_eps"], mc["rms_norm_eps"], mc["rms_norm_eps"], POST_MULT)
        self.residual = torch.randn(tokens, hc, d, device=dev).to(torch.bfloat16)
        self.embedding = torch.randn(tokens, d, device=dev).to(torch.bfloat16)
        self.x = torch.randn(tokens, d, device=dev).to(torch.bfloat16)
        self.fn = torch.randn(mix, hc * d, device=dev) * 1e-3
        self.scale = torch.full((3,), 0.5, device=dev)
        self.base = torch.randn(mix, device=dev) * 0.1
        self.norm_weight = (1 + 0.1 * torch.randn(d, device=dev)).to(torch.bfloat16)
        self.post = torch.rand(tokens, hc, device=dev)
        self.comb = torch.rand(tokens, hc, hc, device=dev) / hc
        self.head_fn = torch.randn(hc, hc * d, device=dev) * 1e-3
        self.head_scale = torch.full((1,), 0.5, device=dev)
        self.head_base = torch.randn(hc, device=dev) * 0.1


def make_call(form, route, i):
    """A no-argument function making one call of `form` through `route` on inputs i."""
    c = i.consts
    kw = dict(zip(("sinkhorn_iters", "hc_eps", "rms_eps", "norm_eps", "post_mult"), c))
    ops = torch.ops.hcwarm
    api = route == "hcwarm"
    if form == "hc_pre":
        return (lambda: hcwarm.hc_pre(i.residual, i.fn, i.scale, i.base, i.norm_weight, **kw)) if api else \
            (lambda: ops.hc_pre(i.residual, i.fn, i.scale, i.base, i.norm_weight, *c))
    if form == "hc_pre_no_norm":
        return (lambda: hcwarm.hc_pre(i.residual, i.fn, i.scale, i.base, **kw)) if api else \
            (lambda: ops.hc_pre(i.residual, i.fn, i.scale, i.base, None, *c))
    if form == "hc_pre_embedding":
        return (lambda: hcwarm.hc_pre(i.embedding, i.fn, i.scale, i.base, i.norm_weight, **kw)) if api else \
            (lambda: ops.hc_pre(i.embedding, i.fn, i.scale, i.base, i.norm_weight, *c))
    if form == "hc_post":
        return (lambda: hcwarm.hc_post(i.x, i.residual, i.post, i.comb)) if api else \
            (lambda: ops.hc_post(i.x, i.residual, i.post, i.comb))
    if form == "hc_post_pre":
        return (lambda: hcwarm.hc_post_pre(i.x, i.residual, i.post, i.comb, i.fn, i.scale, i.base, i.norm_weight,
                                           **kw)) if api else \
            (lambda: ops.hc_post_pre(i.x, i.residual, i.post, i.comb, i.fn, i.scale, i.base, i.norm_weight, *c))
    if form == "hc_head":
        return (lambda: hcwarm.hc_head(i.residual, i.head_fn, i.head_scale, i.head_base, hc_eps=c[1],
                                       rms_eps=c[2])) if api else \
            (lambda: ops.hc_head(i.residual, i.head_fn, i.head_scale, i.head_base, c[1], c[2]))
    raise ValueError(f"unknown form {form}")


def torch_add_call(dev):
    a = torch.ones(1024, device=dev)
    b = torch.ones(1024, device=dev)
    return lambda: torch.add(a, b)


def host_us(call, n):
    """Mean host time per call of n back-to-back calls (no sync inside), best of 5 rounds."""
    for _ in range(100):
        call()
    rounds = []
    for _ in range(5):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            call()
        rounds.append((time.perf_counter() - t0) * 1e6 / n)
    torch.cuda.synchronize()
    return min(rounds)


def eager_device_us(call, n, repeats=5):
    """Device time per call of n queued calls: the GPU sleeps while the host queues them."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    per_call = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        torch.cuda._sleep(SLEEP_CYCLES)
        start.record()
        for _ in range(n):
            call()
        end.record()
        end.synchronize()
        per_call.append(start.elapsed_time(end) * 1e3 / n)
    return statistics.median(per_call)


def graph_us(calls, dev, repeats=5):
    """One CUDA graph of `calls` (callables, captured in order after a side-stream
    warm-up of the first); median over `repeats` of one replay timed by events,
    over the number of calls: device microseconds per call under graph replay."""
    side = torch.cuda.Stream(dev)  # torch wants a side-stream warm-up before capture
    side.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(side):
        calls[0]()
    torch.cuda.current_stream(dev).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for call in calls:
            call()
    graph.replay()  # untimed: the first replay uploads the graph
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    per_call = []
    for _ in range(repeats):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        per_call.append(start.elapsed_time(end) * 1e3 / len(calls))
    graph.reset()
    return statistics.median(per_call)


def graph_device_us(call, n, dev, repeats=5):
    return graph_us([call] * n, dev, repeats)


def first_call_child(model, chunk, tokens, form, route, dev, busy=False):
    """In a fresh process, as an engine starts: the model's tensors, then prewarm(), then the host time
    of calls 1..100 of one form and route (form "torch.add": torch.add's, for reference). busy: 200
    torch.mul calls between prewarm() and the timed calls. Then the same call three more times, each
    after the GPU went idle and 64 MiB were written over the CPU's caches (median: "flushed"), the
    cost of a call that finds nothing warm but needs no one-time set-up either."""
    dev = torch.device(dev)
    torch.cuda.set_device(dev)
    i = Inputs(model, tokens, dev)
    base, warmed = form.removesuffix(WARMED), form.endswith(WARMED)
    call = torch_add_call(dev) if base == "torch.add" else make_call(base, route, i)
    hcwarm.prewarm(model, chunked_prefill_size=chunk, device=dev, fused_norm=None)
    if warmed:  # the op itself, directly before: what its last warm call's distance costs
        for _ in range(3):
            call()
    torch.cuda.synchronize()
    if busy:
        a = torch.ones(1024, device=dev)
        for _ in range(200):
            torch.mul(a, a)
    times = []
    for _ in range(100):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1e6)
    flushed = []
    scratch = bytearray(FLUSH_BYTES)
    for k in range(3):
        torch.cuda.synchronize()
        scratch[::64] = bytes([k + 1]) * (FLUSH_BYTES // 64)  # one write per cache line
        t0 = time.perf_counter()
        call()
        flushed.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return {"form": form, "route": route, "busy": busy, "first_us": times[0], "call100_us": times[99],
            "median_2_100_us": statistics.median(times[1:]), "flushed_us": statistics.median(flushed),
            "compiles_after_ready": hcwarm.compiles_after_ready(dev),
            "first_calls_pending": getattr(hcwarm, "first_calls_pending", lambda: None)()}


def run(args, dev):
    """The calls table: first call per form and route (fresh processes), then host, eager and graph."""
    model, chunk, tokens = args.call_model, args.call_chunk, args.call_tokens
    # Both norm forms, so that every form's kernel is warm; fills the disk cache for the children.
    report = hcwarm.prewarm(model, chunked_prefill_size=chunk, device=dev, fused_norm=None)
    print(f"prewarm {model}: {report.keys} keys, compiled {report.compiled}, {report.seconds:.2f} s")
    first = []
    states = (False,) if args.first_call_idle_only else (False, True)
    forms = [(f, r) for f in FORMS for r in ROUTES]
    if args.first_call_warmed:
        forms += [(f + WARMED, r) for f, r in forms]
    for form, route in [("torch.add", "torch"), ("torch.add" + WARMED, "torch")] + forms:
        for busy in states:
            cmd = [sys.executable, os.path.abspath(sys.argv[0]), "--first-call-child", form, route,
                   "--call-model", model, "--call-chunk", str(chunk), "--call-tokens", str(tokens),
                   "--device", str(dev)] + (["--first-call-busy"] if busy else [])
            runs = []
            for _ in range(args.first_call_processes):
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
                if p.returncode != 0:
                    raise RuntimeError(f"first-call child {form} {route} failed:\n{p.stderr[-4000:]}")
                runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
            # One first call per process: the median over the processes, each process's figures kept.
            f = dict(runs[0], **{k: statistics.median(r[k] for r in runs) for k in CHILD_TIMES},
                     compiles_after_ready=max(r["compiles_after_ready"] for r in runs),
                     processes=[{k: r[k] for k in CHILD_TIMES} for r in runs])
            first.append(f)
            each = ", ".join(f"{r['first_us']:.1f}" for r in runs)
            print(f"first call {form:<17} {route:<9} {'busy' if busy else 'idle':<4} {f['first_us']:9.1f} us, "
                  f"100th {f['call100_us']:7.1f} us, flushed {f['flushed_us']:7.1f} us "
                  f"(medians of {len(runs)} processes; first calls {each})")
    i = Inputs(model, tokens, dev)
    add_host = host_us(torch_add_call(dev), args.host_calls)
    rows = []
    for form in FORMS:
        for route in ROUTES:
            call = make_call(form, route, i)
            row = {"form": form, "route": route, "host_us": host_us(call, args.host_calls),
                   "eager_device_us": eager_device_us(call, args.calls),
                   "graph_device_us": graph_device_us(call, args.calls, dev)}
            row["host_over_add"] = row["host_us"] / add_host
            rows.append(row)
    return {"model": model, "chunked_prefill_size": chunk, "tokens": tokens, "torch_add_host_us": add_host,
            "first_call": first, "rows": rows, "compiles_after_ready": hcwarm.compiles_after_ready(dev)}


def print_table(calls):
    add = calls["torch_add_host_us"]
    firsts = {(f["form"], f["route"]): f for f in calls["first_call"] if not f.get("busy")}
    busy = {(f["form"], f["route"]): f for f in calls["first_call"] if f.get("busy")}
    ref = firsts[("torch.add", "torch")]
    print(f"\nper-call cost, {calls['model']} at T={calls['tokens']}; torch.add host {add:.2f} us, its first call "
          f"after prewarm {ref['first_us']:.1f} us, 100th {ref['call100_us']:.1f} us, flushed {ref['flushed_us']:.1f} us; "
          f"compiles after ready {calls['compiles_after_ready']}")
    for state, firsts_in in (("idle", firsts), ("busy", busy)):
        w = firsts_in.get(("torch.add" + WARMED, "torch"))
        if w:
            print(f"torch.add warmed as prewarm() warms hcwarm's ops ({state}): first {w['first_us']:.1f} us, "
                  f"100th {w['call100_us']:.1f} us, first/100th {w['first_us'] / w['call100_us']:.2f}")
    if ("torch.add", "torch") in busy:
        print(f"torch.add's first call after 200 torch.mul calls: {busy[('torch.add', 'torch')]['first_us']:.1f} us")
    warmed = [(k, f) for k, f in firsts.items() if k[0].endswith(WARMED) and k[0] != "torch.add" + WARMED]
    if warmed:
        print("first calls of each form called 3 times right after prewarm() (" + WARMED + "): " + ", ".join(
            f"{k[0].removesuffix(WARMED)} {k[1]} {f['first_us']:.1f}/{f['call100_us']:.1f} us "
            f"{f['first_us'] / f['call100_us']:.2f}x" for k, f in warmed))
    print(f"{'op':<17} {'route':<9} {'first us':>9} {'100th us':>9} {'1st/100th':>9} {'flushed':>8} "
          f"{'1st/flu':>7} {'busy 1st':>9} {'/100th':>7} {'host us':>8} {'x add':>6} {'eager us':>9} {'graph us':>9}")
    for r in calls["rows"]:
        f = firsts[(r["form"], r["route"])]
        b = busy.get((r["form"], r["route"]))
        busy_cells = f"{b['first_us']:>9.1f} {b['first_us'] / b['call100_us']:>7.2f}" if b else f"{'-':>9} {'-':>7}"
        print(f"{r['form']:<17} {r['route']:<9} {f['first_us']:>9.1f} {f['call100_us']:>9.1f} "
              f"{f['first_us'] / f['call100_us']:>9.2f} {f['flushed_us']:>8.1f} {f['first_us'] / f['flushed_us']:>7.2f} "
              f"{busy_cells} "
              f"{r['host_us']:>8.2f} {r['host_over_add']:>6.2f} {r['eager_device_us']:>9.2f} {r['graph_device_us']:>9.2f}")
