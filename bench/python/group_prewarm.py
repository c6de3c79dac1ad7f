#!/usr/bin/env python3
"""Times hcwarm.prewarm(group=...) over a real torch.distributed gloo group of H simulated hosts
of N ranks each (a cache directory and an equal slice of this machine's CPUs per host, no shared
file system between hosts), against one process alone on one host's CPUs, both from cold caches;
then the job again on its caches (a restart).

Reports per host and rank: keys compiled, received (published from other hosts), loaded,
prewarm seconds and ready time from the common start; the job's compiles against the planned
keys; the ready-time skew; and the job's wall time over one process alone. On CUDA all ranks
share the one GPU (each its own context). `hcwarm bench cold-start --hosts` measures the same
without PyTorch (C++ ranks exchanging through a loopback hub).

Run:
    python3 bench/python/group_prewarm.py --device cpu --model dsv4-flash --chunked-prefill-size 512 --num-sms 132
    python3 bench/python/group_prewarm.py --device cuda --model dsv4-pro --chunked-prefill-size 16384 --json out.json
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

RANK = r"""
import json, os, sys, time
start, rank, world, cache, sync, model, cps, device, num_sms, cpus = sys.argv[1:11]
rank, world, cps = int(rank), int(world), int(cps)
os.sched_setaffinity(0, [int(c) for c in cpus.split(",")])
import torch.distributed as dist
import hcwarm
time.sleep(max(0.0, float(start) - time.time()))
t0 = time.time()
if world > 1:
    dist.init_process_group("gloo", init_method="file://" + sync + "/init", rank=rank, world_size=world)
kw = {"num_sms": int(num_sms)} if num_sms != "0" else {}
r = hcwarm.prewarm(model, chunked_prefill_size=cps, device=device, cache_dir=cache,
                   group=dist.group.WORLD if world > 1 else None, **kw)
print(json.dumps({"rank": rank, "keys": r.keys, "compiled": len(r.compiled_keys), "received": r.received,
                  "refused": r.refused, "loaded_from_disk": r.loaded_from_disk, "prewarm_s": time.time() - t0,
                  "exchange_s": r.exchange_seconds, "ready_s": r.ready_time - float(start)}), flush=True)
os._exit(0)
"""


def cpu_slices(hosts):
    """This process's CPUs in `hosts` equal contiguous slices (round robin when fewer CPUs than hosts)."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < hosts:
        return [[cpus[h % len(cpus)]] for h in range(hosts)]
    return [cpus[h * len(cpus) // hosts:(h + 1) * len(cpus) // hosts] for h in range(hosts)]


def run_job(args, hosts, per_host, base, tag, slices):
    """hosts x per_host ranks started together; rank r on base/host-(r // per_host) and CPU slice r // per_host."""
    world = hosts * per_host
    sync = tempfile.mkdtemp(prefix=f"hcwarm-group-{tag}-")
    start = time.time() + 1.0 + 0.2 * world
    procs = []
    for rank in range(world):
        cpus = slices[rank // per_host]
        env = dict(os.environ, HCWARM_LOG_LEVEL="warn", HCWARM_LOCAL_WORLD_SIZE=str(per_host),
                   HCWARM_JOBS=str(max(1, len(cpus) // per_host)))
        cache = os.path.join(base, f"host-{rank // per_host}")
        procs.append(subprocess.Popen(
            [sys.executable, "-c", RANK, str(start), str(rank), str(world), cache, sync, args.model,
             str(args.chunked_prefill_size), args.device, str(args.num_sms), ",".join(map(str, cpus))],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    ranks = []
    for rank, p in enumerate(procs):
        out, err = p.communicate(timeout=args.timeout)
        if p.returncode != 0:
            sys.exit(f"rank {rank} failed (exit {p.returncode}):\n{err[-4000:]}")
        r = json.loads(out.strip().splitlines()[-1])
        r["host"] = rank // per_host
        ranks.append(r)
    ready = [r["ready_s"] for r in ranks]
    return {"hosts": hosts, "processes_per_host": per_host, "ranks": ranks, "keys": ranks[0]["keys"],
            "compiled_total": sum(r["compiled"] for r in ranks), "wall_s": max(ready),
            "ready_skew_s": max(ready) - min(ready)}


def print_job(title, job):
    print(f"{title}:")
    print(f"  {'rank':>4}  {'host':>4}  {'compiled':>8}  {'received':>8}  {'loaded':>6}  {'keys':>4}  "
          f"{'prewarm s':>9}  {'ready s':>7}")
    for r in job["ranks"]:
        print(f"  {r['rank']:>4}  {r['host']:>4}  {r['compiled']:>8}  {r['received']:>8}  {r['loaded_from_disk']:>6}  "
              f"{r['keys']:>4}  {r['prewarm_s']:>9.3f}  {r['ready_s']:>7.3f}"
              + (f"  {len(r['refused'])} refused" if r["refused"] else ""))
    print(f"  compiles in the job: {job['compiled_total']} for {job['keys']} planned keys; ready after "
          f"{job['wall_s']:.3f} s, skew {job['ready_skew_s']:.3f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--hosts", type=int, default=2, help="simulated hosts (a cache directory each)")
    ap.add_argument("--processes", type=int, default=2, help="ranks per host")
    ap.add_argument("--model", default="dsv4-pro", help="preset or config.json")
    ap.add_argument("--chunked-prefill-size", type=int, default=16384)
    ap.add_argument("--num-sms", type=int, default=0, help="SMs to plan for on the CPU (0: the default)")
    ap.add_argument("--device", default="cuda", help="cpu or cuda")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds a rank may take")
    ap.add_argument("--json", help="also write the report here")
    args = ap.parse_args()
    if args.hosts < 1 or args.processes < 1:
        ap.error("--hosts and --processes must be positive")
    base = tempfile.mkdtemp(prefix="hcwarm-group-bench-")
    slices = cpu_slices(args.hosts)
    job = run_job(args, args.hosts, args.processes, os.path.join(base, "job"), "job", slices)
    alone = run_job(args, 1, 1, os.path.join(base, "alone"), "alone", slices[:1])  # one host's CPUs
    restart = run_job(args, args.hosts, args.processes, os.path.join(base, "job"), "restart", slices)
    what = f"{args.hosts} hosts of {args.processes} ranks"
    print_job(f"{what} (gloo group, a cache directory per host)", job)
    print_job("one process alone", alone)
    print_job(f"{what}, restarted on their caches", restart)
    ratio = job["wall_s"] / alone["wall_s"]
    print(f"{what} took {ratio:.2f}x the wall time of one process alone; the restart compiled "
          f"{restart['compiled_total']}")
    report = {"command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]),
              "date": time.strftime("%Y-%m-%d"), "host_cpus": slices, "job": job, "one_process": alone, "restart": restart,
              "wall_ratio": ratio,
              "ok": job["compiled_total"] == job["keys"] and restart["compiled_total"] == 0}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    sys.exit(0 if report["ok"] else 1)


if __name__ == "__main__":
    main()
