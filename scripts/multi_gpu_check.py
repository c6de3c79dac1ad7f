#!/usr/bin/env python3
"""Ranks of one host, one process per GPU, warming one shared kernel cache together
and serving on their own devices.

    python scripts/multi_gpu_check.py --ranks 2 --cache-dir /tmp/hcwarm-mgpu --json-out report.json

Two phases, each with fresh processes started through torch.multiprocessing and
joined into one torch.distributed group (NCCL when every rank has a GPU of its own,
gloo when ranks share GPUs, e.g. several ranks on a one-GPU machine):

  cold     the cache directory is empty: every rank calls hcwarm.prewarm(..., group=)
           at the same moment; per rank: keys compiled / loaded, seconds, ready time;
           the compiles of all ranks together must equal the planned keys. Then each
           rank serves: hc_pre and hc_post on tensors of its own device on a
           non-default stream (checked against the float64 reference), a decode CUDA
           graph captured on its device and replayed (bit-equal to eager); after every
           call the tensors' device, torch's current device and the driver's current
           context must still be the rank's own, and nothing compiles after ready.
  restart  new processes on the populated cache: 0 compiles, warmup seconds per rank.
  alone    one rank by itself on another empty cache directory (skip with --no-alone):
           the reference for the cold phase, whose slowest ready time is reported as a
           ratio to this one's.

Exit status 0 when every check passed, 1 otherwise (the failing checks are printed).
Needs PyTorch with CUDA and hcwarm installed (scripts/setup.sh, or pip install .).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import socket
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python", "tests"))  # numerics.py: the documented tolerances


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--ranks", type=int, default=0, help="processes (default: one per visible GPU, at least 2)")
    p.add_argument("--cache-dir", default="", help="shared kernel cache directory; must be empty or absent "
                   "(default: a fresh temporary directory)")
    p.add_argument("--model", default="dsv4-pro", help="preset name or config.json (default: dsv4-pro)")
    p.add_argument("--chunked-prefill-size", type=int, default=8192, help="serving's chunked prefill size "
                   "(default: 8192)")
    p.add_argument("--backend", choices=("auto", "nccl", "gloo"), default="auto",
                   help="torch.distributed backend (auto: nccl when every rank has its own GPU, else gloo)")
    p.add_argument("--decode-tokens", type=int, default=4, help="T of the captured decode graph (default: 4)")
    p.add_argument("--json-out", default="", help="also write the whole report as JSON to this file")
    p.add_argument("--no-alone", action="store_true", help="skip the phase of one rank alone on an empty cache")
    p.add_argument("--port", type=int, default=0, help="rendezvous port on 127.0.0.1 (default: 0, a free port per "
                   "phase, so that two checks on one host never join each other's group)")
    return p.parse_args(argv)


# ---------------------------------------------------------------- in each rank

class DriverContext:
    """The CUDA driver's current context, to check that hcwarm restored it."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")

    def device_of_current(self) -> int:
        ctx = ctypes.c_void_p()
        if self.lib.cuCtxGetCurrent(ctypes.byref(ctx)) != 0 or not ctx.value:
            return -1
        dev = ctypes.c_int()
        return dev.value if self.lib.cuCtxGetDevice(ctypes.byref(dev)) == 0 else -1


def random_inputs(torch, t, d, hc, seed, device):
    g = torch.Generator().manual_seed(seed)
    mix = hc * (2 + hc)
    residual = torch.randn(t, hc, d, generator=g).to(torch.bfloat16)
    fn = torch.randn(mix, hc * d, generator=g) * 1e-3
    scale = torch.randn(3, generator=g) * 0.1
    base = torch.randn(mix, generator=g) * 0.1
    w = (1 + 0.1 * torch.randn(d, generator=g)).to(torch.bfloat16)
    x = torch.randn(t, d, generator=g).to(torch.bfloat16)
    return [v.to(device) for v in (residual, fn, scale, base, w, x)]


def serve_checks(torch, hcwarm, rank, device, hidden, decode_tokens, max_num_tokens):
    """Numerics on a side stream, graph capture and replay, device and context checks."""
    from numerics import compare, compare_post

    failures = []
    driver = DriverContext()
    ordinal = device.index

    def where(step, *tensors):
        for t in tensors:
            if t.device != device:
                failures.append(f"{step}: an output is on {t.device}, not {device}")
        if torch.cuda.current_device() != ordinal:
            failures.append(f"{step}: torch's current device became {torch.cuda.current_device()}")
        got = driver.device_of_current()
        if got != ordinal:
            failures.append(f"{step}: the driver's current context is on device {got}")

    hc = 4
    out = {}
    stream = torch.cuda.Stream(device)
    for t in sorted({1, min(37, max_num_tokens), min(1024, max_num_tokens)}):  # buckets the prewarm covered
        residual, fn, scale, base, w, x = random_inputs(torch, t, hidden, hc, 100 + t, device)
        with torch.cuda.stream(stream):
            y, post, comb = hcwarm.hc_pre(residual, fn, scale, base, w)
            new_residual = hcwarm.hc_post(x, residual, post, comb)
        stream.synchronize()
        where(f"T={t}", y, post, comb, new_residual)
        np_in = [v.float().cpu().numpy() for v in (residual, fn, scale, base, w)]
        errs = compare(y.float().cpu().numpy(), post.cpu().numpy(), comb.cpu().numpy(), *np_in)
        compare_post(new_residual.float().cpu().numpy(), x.float().cpu().numpy(), np_in[0],
                     post.cpu().numpy(), comb.cpu().numpy())
        out[f"T={t}"] = errs

    # A decode step captured on the rank's device, replayed, compared with eager.
    t = decode_tokens
    residual, fn, scale, base, w, x = random_inputs(torch, t, hidden, hc, 7, device)
    y = torch.empty(t, hidden, dtype=torch.bfloat16, device=device)
    post = torch.empty(t, hc, device=device)
    comb = torch.empty(t, hc, hc, device=device)
    new_residual = torch.empty_like(residual)

    def step():
        hcwarm.hc_pre(residual, fn, scale, base, w, out=(y, post, comb))
        hcwarm.hc_post(x, residual, post, comb, out=new_residual)

    with torch.cuda.stream(stream):
        step()
    stream.synchronize()
    eager = [v.clone() for v in (y, post, comb, new_residual)]
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        step()
    for v in (y, post, comb, new_residual):
        v.zero_()
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize(device)
    where("graph replay", y, post, comb, new_residual)
    replay_equal = all(torch.equal(a, b) for a, b in zip(eager, (y, post, comb, new_residual)))
    if not replay_equal:
        failures.append("graph replay differs from the eager call")
    out["graph_replay_bit_equal"] = replay_equal
    out["compiles_after_ready"] = hcwarm.compiles_after_ready(device)
    out["background_compiles_after_ready"] = hcwarm.background_compiles_after_ready(device)
    if out["compiles_after_ready"] != 0 or out["background_compiles_after_ready"] != 0:
        failures.append(f"{out['compiles_after_ready']} compiles after ready "
                        f"({out['background_compiles_after_ready']} in the background)")
    return out, failures


def rank_main(rank, args, phase, world, backend, result_dir):
    import torch
    import torch.distributed as dist

    import hcwarm

    report = {"rank": rank, "phase": phase, "failures": []}
    try:
        ngpu = torch.cuda.device_count()
        device = torch.device("cuda", rank % ngpu)
        torch.cuda.set_device(device)
        dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{args.port}", rank=rank, world_size=world,
                                **({"device_id": device} if backend == "nccl" else {}))
        group = dist.group.WORLD
        dist.barrier(group)
        t0 = time.time()
        start = torch.tensor([t0], dtype=torch.float64, device=device if backend == "nccl" else "cpu")
        dist.broadcast(start, 0, group)  # one clock origin: rank 0's start
        warm = hcwarm.prewarm(args.model, chunked_prefill_size=args.chunked_prefill_size, device=device,
                              cache_dir=args.cache_dir, group=group)
        ready = time.time() - float(start.item())
        # compiled_keys: this rank's compiles in the whole call (its shard, then any misses).
        report.update(device=str(device), keys=warm.keys, compiled=len(warm.compiled_keys),
                      shard=len(warm.shard_keys), received=warm.received, exchange_s=round(warm.exchange_seconds, 4),
                      loaded_from_disk=warm.loaded_from_disk, memory_hits=warm.memory_hits,
                      seconds=round(warm.seconds, 4), ready_s=round(ready, 4))
        if phase == "cold":
            hidden = hcwarm.model_config(args.model)["hidden_size"]
            checks, failures = serve_checks(torch, hcwarm, rank, device, hidden, args.decode_tokens,
                                            warm.max_num_tokens)
            report["serve"] = checks
            report["failures"] += failures
        dist.barrier(group)
        dist.destroy_process_group()
    except Exception as e:  # reported by the parent, with the rank
        report["failures"].append(f"{type(e).__name__}: {e}")
        report["traceback"] = traceback.format_exc()
    with open(os.path.join(result_dir, f"{phase}-{rank}.json"), "w") as f:
        json.dump(report, f)


# ---------------------------------------------------------------- the parent

def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_phase(args, phase, world, backend):
    import torch.multiprocessing as mp

    if args.port == 0:
        args = argparse.Namespace(**dict(vars(args), port=free_port()))

    with tempfile.TemporaryDirectory(prefix="hcwarm-mgpu-") as result_dir:
        mp.start_processes(rank_main, args=(args, phase, world, backend, result_dir), nprocs=world, join=True,
                           start_method="spawn")
        reports = []
        for r in range(world):
            path = os.path.join(result_dir, f"{phase}-{r}.json")
            if not os.path.exists(path):
                reports.append({"rank": r, "phase": phase, "failures": ["the rank wrote no report"]})
                continue
            with open(path) as f:
                reports.append(json.load(f))
    return reports


def summarize(phase, reports):
    lines = [f"{phase}:", f"  {'rank':>4} {'device':>7} {'keys':>5} {'compiled':>8} {'disk':>5} "
             f"{'seconds':>8} {'ready s':>8}"]
    for r in reports:
        lines.append(f"  {r['rank']:>4} {r.get('device', '?'):>7} {r.get('keys', 0):>5} {r.get('compiled', 0):>8} "
                     f"{r.get('loaded_from_disk', 0):>5} {r.get('seconds', 0):>8.3f} {r.get('ready_s', 0):>8.3f}")
    ready = [r["ready_s"] for r in reports if "ready_s" in r]
    skew = max(ready) - min(ready) if ready else float("nan")
    compiled = sum(r.get("compiled", 0) for r in reports)
    keys = max((r.get("keys", 0) for r in reports), default=0)
    lines.append(f"  compiles between the ranks: {compiled} (planned keys: {keys}); ready-time skew: {skew:.3f} s")
    return "\n".join(lines), {"ranks": reports, "compiled_total": compiled, "planned_keys": keys,
                              "ready_skew_s": skew}


def main(argv=None):
    args = parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("multi_gpu_check: no CUDA device", file=sys.stderr)
        return 2
    ngpu = torch.cuda.device_count()
    world = args.ranks or max(2, ngpu)
    if world < 1:
        print(f"multi_gpu_check: --ranks {args.ranks} is not a positive count", file=sys.stderr)
        return 2
    own_gpus = ngpu >= world
    backend = args.backend if args.backend != "auto" else ("nccl" if own_gpus else "gloo")
    if backend == "nccl" and not own_gpus:
        print(f"multi_gpu_check: NCCL needs a GPU per rank ({world} ranks, {ngpu} GPUs); use --backend gloo",
              file=sys.stderr)
        return 2
    if not args.cache_dir:
        args.cache_dir = tempfile.mkdtemp(prefix="hcwarm-mgpu-cache-")
    elif os.path.exists(args.cache_dir) and os.listdir(args.cache_dir):
        print(f"multi_gpu_check: --cache-dir {args.cache_dir} is not empty (the cold phase needs an empty one)",
              file=sys.stderr)
        return 2

    names = [torch.cuda.get_device_name(i) for i in range(ngpu)]
    print(f"{world} ranks on {ngpu} GPU(s) ({', '.join(names)}), backend {backend}, cache {args.cache_dir}")
    full = {"schema_version": 1, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "ranks": world,
            "gpus": names, "backend": backend, "model": args.model,
            "chunked_prefill_size": args.chunked_prefill_size, "phases": {}}
    failures = []
    phases = ("cold", "restart") if args.no_alone else ("cold", "restart", "alone")
    for phase in phases:
        if phase == "alone":  # one rank on a cache of its own, removed afterwards
            with tempfile.TemporaryDirectory(prefix="hcwarm-mgpu-alone-") as alone_cache:
                reports = run_phase(argparse.Namespace(**{**vars(args), "cache_dir": alone_cache}), phase, 1, backend)
        else:
            reports = run_phase(args, phase, world, backend)
        text, data = summarize(phase, reports)
        print(text)
        full["phases"][phase] = data
        for r in reports:
            failures += [f"{phase}, rank {r['rank']}: {f}" for f in r["failures"]]
            if "traceback" in r:
                print(r["traceback"], file=sys.stderr)
        if phase == "cold" and data["compiled_total"] != data["planned_keys"]:
            failures.append(f"cold: the ranks compiled {data['compiled_total']} keys, {data['planned_keys']} planned")
        if phase == "alone" and data["compiled_total"] != data["planned_keys"]:
            failures.append(f"alone: the rank compiled {data['compiled_total']} keys, {data['planned_keys']} planned")
        if phase == "restart" and data["compiled_total"] != 0:
            failures.append(f"{phase}: {data['compiled_total']} compiles on a populated cache")
    if "alone" in full["phases"]:
        slowest = max((r.get("ready_s", 0.0) for r in full["phases"]["cold"]["ranks"]), default=0.0)
        alone = full["phases"]["alone"]["ranks"][0].get("ready_s", 0.0)
        ratio = slowest / alone if alone > 0 else float("nan")
        full["cold_ready_over_alone"] = ratio
        print(f"cold: slowest rank ready in {slowest:.3f} s, one rank alone {alone:.3f} s: {ratio:.2f}x")
    for r in full["phases"]["cold"]["ranks"]:
        for case, errs in r.get("serve", {}).items():
            print(f"  serve rank {r['rank']} {case}: {errs}")
    full["failures"] = failures
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(full, f, indent=2)
    for f in failures:
        print(f"FAILED {f}")
    print("all checks passed" if not failures else f"{len(failures)} checks failed")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
