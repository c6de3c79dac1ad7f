"""prewarm(group=...): the ranks of a process group split the planned keys, meet in the group's
barrier, then each loads every key. Each rank is its own process (contexts are per process).

The group is a stand-in: a fake torch.distributed module (with PyTorch, its own module's functions
patched), installed after hcwarm is imported, whose barrier is a directory the ranks write into; it
records every call. With PyTorch a real gloo group runs the same checks (skipped without torch).
"""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

CONFIG = {"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 1024, "hc_mult": 4, "num_hidden_layers": 2,
          "sliding_window": 128}

# argv: rank, world, cache dir, barrier dir, chunked_prefill_size, mode ("fake", "uninitialized", "outsider")
FAKE_RANK = textwrap.dedent("""
    import json, os, sys, time, types
    import hcwarm
    rank, world, cache, sync, cps, mode = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4],
                                           int(sys.argv[5]), sys.argv[6])
    cfg = json.loads(sys.argv[7])
    calls = []
    GROUP = object()

    def get_rank(group):
        calls.append(["get_rank", group is GROUP])
        return -1 if mode == "outsider" else rank

    def get_world_size(group):
        calls.append(["get_world_size", group is GROUP])
        return world

    def barrier(group=None):
        # How many kernels this rank had compiled when it reached the barrier.
        calls.append(["barrier", group is GROUP, hcwarm.stats("cpu")["compiled"]])
        open(os.path.join(sync, str(rank)), "w").close()
        deadline = time.time() + 240
        while len(os.listdir(sync)) < world:
            if time.time() > deadline:
                raise RuntimeError("barrier: the other ranks never came")
            time.sleep(0.01)

    try:  # with PyTorch installed, its own module is patched (hcwarm's ops stay registered with that torch)
        import torch.distributed as dist
    except ImportError:
        dist = types.ModuleType("torch.distributed")
        torch = types.ModuleType("torch")
        torch.distributed = dist
        sys.modules["torch"], sys.modules["torch.distributed"] = torch, dist
    dist.is_available = lambda: True
    dist.is_initialized = lambda: mode != "uninitialized"
    dist.get_rank, dist.get_world_size, dist.barrier = get_rank, get_world_size, barrier

    out = {"calls": calls}
    try:
        r = hcwarm.prewarm(cfg, chunked_prefill_size=cps, device="cpu", num_sms=16, cache_dir=cache, group=GROUP)
        out["report"] = r.as_dict()
        out["planned"] = hcwarm.get_context("cpu").planned_keys("config dict", json.dumps(cfg), cps, 1, False,
                                                                True, False)
    except (ValueError, hcwarm.HcwarmError) as e:
        out["error"] = type(e).__name__ + ": " + str(e)
    print(json.dumps(out))
""")


def run_ranks(script, world, caches, sync, cps=600, mode="fake", extra_env=None):
    """Starts `world` rank processes at once; returns their outputs, rank order."""
    os.makedirs(sync, exist_ok=True)
    env = dict(os.environ, HCWARM_LOG_LEVEL="error", **(extra_env or {}))
    procs = [subprocess.Popen([sys.executable, "-c", script, str(r), str(world), str(caches[r]), str(sync), str(cps),
                               mode, json.dumps(CONFIG)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in range(world)]
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        assert p.returncode == 0, stderr
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    return outs


def check_shards(outs, world):
    planned = outs[0]["planned"]
    assert len(planned) == len(set(planned)) == outs[0]["report"]["keys"]
    for rank, out in enumerate(outs):
        r = out["report"]
        assert out["planned"] == planned  # every rank plans the same keys in the same order
        assert (r["rank"], r["world_size"]) == (rank, world)
        assert r["shard_keys"] == planned[rank::world], (rank, r["shard_keys"])
        # One barrier, on the group given, after this rank's shard was compiled.
        barriers = [c for c in out["calls"] if c[0] == "barrier"]
        assert barriers == [["barrier", True, len(r["shard_keys"])]], out["calls"]
        assert all(c[1] for c in out["calls"]), out["calls"]
        assert r["ready_time"] > 0 and r["barrier_seconds"] >= 0
    return planned


def test_ranks_sharing_a_cache_compile_each_key_once(tmp_path):
    world = 3
    cache = tmp_path / "cache"
    outs = run_ranks(FAKE_RANK, world, [cache] * world, tmp_path / "barrier")
    planned = check_shards(outs, world)
    assert len(planned) >= 7  # at least one kernel per split bucket of [1, 600] at 16 SMs (7)
    compiled = []
    for out in outs:
        r = out["report"]
        # This rank compiled its shard and nothing else: after the barrier every key is on disk.
        assert sorted(r["compiled_keys"]) == sorted(r["shard_keys"]), r  # in the order the compiles ended
        assert r["compiled"] == 0 and r["loaded_from_disk"] == r["keys"] == len(planned), r
        compiled += r["compiled_keys"]
    assert sorted(compiled) == sorted(planned)


def test_ranks_with_their_own_caches_compile_what_they_miss_after_the_barrier(tmp_path):
    world = 2
    outs = run_ranks(FAKE_RANK, world, [tmp_path / "cache0", tmp_path / "cache1"], tmp_path / "barrier", cps=200)
    planned = check_shards(outs, world)
    assert len(planned) >= 4  # the split buckets of [1, 200] at 16 SMs
    for out in outs:
        r = out["report"]
        assert sorted(r["compiled_keys"]) == sorted(planned), r  # its shard first, the rest after the barrier
        assert sorted(r["compiled_keys"][:len(r["shard_keys"])]) == sorted(r["shard_keys"])
        assert r["compiled"] == len(planned) - len(r["shard_keys"]), r
        assert r["loaded_from_disk"] == len(r["shard_keys"]), r


def test_without_a_group_the_report_still_lists_compiles_and_the_ready_time(tmp_path):
    code = textwrap.dedent("""
        import hcwarm, json, sys
        cfg = json.loads(sys.argv[1])
        r = hcwarm.prewarm(cfg, chunked_prefill_size=200, device="cpu", num_sms=16, cache_dir=sys.argv[2])
        print(json.dumps({"report": r.as_dict(), "torch_loaded": "torch.distributed" in sys.modules}))
    """)
    p = subprocess.run([sys.executable, "-c", code, json.dumps(CONFIG), str(tmp_path / "cache")],
                       env=dict(os.environ, HCWARM_LOG_LEVEL="error"), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    r = out["report"]
    assert len(r["compiled_keys"]) == r["compiled"] == r["keys"] >= 4
    assert (r["rank"], r["world_size"], r["shard_keys"]) == (0, 1, [])
    assert r["ready_time"] > 0
    if importlib.util.find_spec("torch") is None:
        assert not out["torch_loaded"]


@pytest.mark.parametrize("mode,message", [("uninitialized", "init_process_group"),
                                          ("outsider", "not a member of the group")])
def test_a_group_this_process_cannot_use_is_refused_before_any_compile(tmp_path, mode, message):
    [out] = run_ranks(FAKE_RANK, 1, [tmp_path / "cache"], tmp_path / "barrier", mode=mode)
    assert out.get("error", "").startswith("ValueError") and message in out["error"], out
    assert not [c for c in out["calls"] if c[0] == "barrier"]
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("manifest.json"))


GLOO_RANK = textwrap.dedent("""
    import json, sys
    import torch.distributed as dist
    import hcwarm
    rank, world, cache, sync, cps = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
    cfg = json.loads(sys.argv[7])
    dist.init_process_group("gloo", init_method="file://" + sync + "/init", rank=rank, world_size=world)
    r = hcwarm.prewarm(cfg, chunked_prefill_size=cps, device="cpu", num_sms=16, cache_dir=cache,
                       group=dist.group.WORLD)
    planned = hcwarm.get_context("cpu").planned_keys("config dict", json.dumps(cfg), cps, 1, False, True, False)
    dist.barrier()
    dist.destroy_process_group()
    calls = [["barrier", True, len(r.shard_keys)]]  # the real barrier records nothing: what check_shards expects
    print(json.dumps({"report": r.as_dict(), "planned": planned, "calls": calls}))
""")


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="PyTorch is not installed")
def test_a_real_gloo_group_shards_then_meets_in_its_barrier(tmp_path):
    world = 2
    outs = run_ranks(GLOO_RANK, world, [tmp_path / "cache"] * world, tmp_path / "sync")
    planned = check_shards(outs, world)
    assert sorted(sum((o["report"]["compiled_keys"] for o in outs), [])) == sorted(planned)
    for out in outs:
        assert out["report"]["compiled"] == 0, out["report"]


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="PyTorch is installed")
def test_a_group_without_pytorch_is_a_clear_error(tmp_path):
    code = textwrap.dedent("""
        import hcwarm
        try:
            hcwarm.prewarm("dsv4-flash", device="cpu", cache_dir=%r, group=object())
        except ValueError as e:
            print("ValueError:", e)
    """ % str(tmp_path / "cache"))
    p = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, HCWARM_LOG_LEVEL="error"),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "ValueError: group:" in p.stdout and "PyTorch is not installed" in p.stdout, p.stdout
    assert not (tmp_path / "cache").exists()
