"""prewarm(group=...): the ranks of a process group split the planned keys, exchange what they
built, and each ends with every key in its own cache, compiled once in the whole group whatever the
host layout (ranks on one cache directory stand for one host). Each rank is its own process.

The group is a stand-in: a fake torch.distributed module (with PyTorch, its own module's functions
patched), installed after hcwarm is imported, and a transport whose all-gather is a directory the
ranks write into; it records every gather and can damage one rank's payload in transit. With
PyTorch a real gloo group runs the same checks, and a rank killed mid-exchange (skipped without torch).
"""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

CONFIG = {"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 1024, "hc_mult": 4, "num_hidden_layers": 2,
          "sliding_window": 128}

# argv: rank, world, cache dir, sync dir, chunked_prefill_size, mode, config
# mode: "fake", "uninitialized", "outsider", "corrupt:<rank>" (that rank's payload is damaged in transit)
FAKE_RANK = textwrap.dedent("""
    import json, os, sys, time, types
    import hcwarm, hcwarm._group
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

    def make_gather(dist_, group, rank_, world_, timeout_s):
        calls.append(["make_gather", group is GROUP])

        def gather(mine):
            # How many kernels this rank had compiled when it reached the gather.
            calls.append(["gather", hcwarm.stats("cpu")["compiled"]])
            if mode == "corrupt:%d" % rank:
                # The first entry's last byte, just before its bundle's checksum line.
                at = mine.index(b"sha256 ", mine.index(b"hcwarm-kernel-bundle "))
                mine = mine[:at - 1] + bytes([mine[at - 1] ^ 1]) + mine[at:]
            tmp = os.path.join(sync, ".%d" % rank)
            with open(tmp, "wb") as f:
                f.write(mine)
            os.rename(tmp, os.path.join(sync, str(rank)))
            deadline = time.time() + 240
            while len([n for n in os.listdir(sync) if not n.startswith(".")]) < world:
                if time.time() > deadline:
                    raise RuntimeError("gather: the other ranks never came")
                time.sleep(0.01)
            return [open(os.path.join(sync, str(r)), "rb").read() for r in range(world)]
        return gather

    try:  # with PyTorch installed, its own module is patched (hcwarm's ops stay registered with that torch)
        import torch.distributed as dist
    except ImportError:
        dist = types.ModuleType("torch.distributed")
        torch = types.ModuleType("torch")
        torch.distributed = dist
        sys.modules["torch"], sys.modules["torch.distributed"] = torch, dist
    dist.is_available = lambda: True
    dist.is_initialized = lambda: mode != "uninitialized"
    dist.get_rank, dist.get_world_size = get_rank, get_world_size
    hcwarm._group.make_gather = make_gather

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


def run_ranks(script, world, caches, sync, cps=600, mode="fake", rank_env=None, ok=True):
    """Starts `world` rank processes at once; returns their outputs (and exit codes), rank order."""
    os.makedirs(sync, exist_ok=True)
    procs = []
    for r in range(world):
        env = dict(os.environ, HCWARM_LOG_LEVEL="error", **((rank_env or {}).get(r, {})))
        procs.append(subprocess.Popen([sys.executable, "-c", script, str(r), str(world), str(caches[r]), str(sync),
                                       str(cps), mode, json.dumps(CONFIG)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        if ok:
            assert p.returncode == 0, stderr
            outs.append(json.loads(stdout.strip().splitlines()[-1]))
        else:
            lines = stdout.strip().splitlines()
            outs.append({"returncode": p.returncode, "stderr": stderr,
                         **(json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {})})
    return outs


def check_shards(outs, world):
    planned = outs[0]["planned"]
    assert len(planned) == len(set(planned)) == outs[0]["report"]["keys"]
    for rank, out in enumerate(outs):
        r = out["report"]
        assert out["planned"] == planned  # every rank plans the same keys in the same order
        assert (r["rank"], r["world_size"]) == (rank, world)
        assert r["shard_keys"] == planned[rank::world], (rank, r["shard_keys"])
        assert r["exchange"]["planned_keys"] == len(planned)
        if "gather" in [c[0] for c in out["calls"]]:
            # One gather, after this rank's shard was built.
            gathers = [c for c in out["calls"] if c[0] == "gather"]
            assert gathers == [["gather", r["exchange"]["shard_compiled"]]], out["calls"]
            assert all(c[1] for c in out["calls"] if c[0] != "gather"), out["calls"]
        assert r["ready_time"] > 0 and r["exchange_seconds"] >= 0
    return planned


def test_ranks_sharing_a_cache_compile_each_key_once(tmp_path):
    world = 3
    cache = tmp_path / "cache"
    outs = run_ranks(FAKE_RANK, world, [cache] * world, tmp_path / "sync")
    planned = check_shards(outs, world)
    assert len(planned) >= 7  # at least one kernel per split bucket of [1, 600] at 16 SMs (7)
    compiled = []
    for out in outs:
        r = out["report"]
        # This rank compiled its shard and nothing else; the others' entries were already in the directory.
        assert sorted(r["compiled_keys"]) == sorted(r["shard_keys"]), r  # in the order the compiles ended
        assert r["compiled"] == 0 and r["loaded_from_disk"] == r["keys"] == len(planned), r
        assert r["received"] == 0 and r["refused"] == [], r
        assert r["exchange"]["shared"] == len(planned) - len(r["shard_keys"]), r
        compiled += r["compiled_keys"]
    assert sorted(compiled) == sorted(planned)


def two_hosts(tmp_path):
    """Four ranks as two hosts of two: ranks 0, 1 on one cache directory, ranks 2, 3 on another."""
    return [tmp_path / "host0"] * 2 + [tmp_path / "host1"] * 2


def check_every_key_once(outs, planned, restart=False):
    compiled = sorted(sum((o["report"]["compiled_keys"] for o in outs), []))
    assert compiled == ([] if restart else sorted(planned))  # each key once in the job, or none on a restart
    for out in outs:
        r = out["report"]
        assert r["compiled"] == 0 and r["loaded_from_disk"] == r["keys"] == len(planned), r  # all on its disk


def test_two_hosts_without_a_shared_cache_compile_each_key_once_and_a_restart_compiles_nothing(tmp_path):
    caches = two_hosts(tmp_path)
    outs = run_ranks(FAKE_RANK, 4, caches, tmp_path / "sync")
    planned = check_shards(outs, 4)
    check_every_key_once(outs, planned)
    for rank, out in enumerate(outs):
        ex = out["report"]["exchange"]
        other_host = [k for s in range(4) if s // 2 != rank // 2 for k in planned[s::4]]
        # The other host's keys arrive once per host: the first of its two ranks publishes, the second finds them.
        assert ex["received"] + ex["received_present"] == len(other_host), ex
        assert ex["shared"] == len(planned[(rank ^ 1)::4]), ex  # the host mate's keys were there already
        assert ex["refused"] == [] and ex["bytes_received"] > 0, ex
    for host in (0, 1):
        assert sum(outs[r]["report"]["received"] for r in (2 * host, 2 * host + 1)) == \
            len([k for s in range(4) if s // 2 != host for k in planned[s::4]])

    again = run_ranks(FAKE_RANK, 4, caches, tmp_path / "sync-again")
    check_every_key_once(again, planned, restart=True)
    for out in again:
        ex = out["report"]["exchange"]
        assert ex["shard_compiled"] == 0 and ex["received"] == 0, ex


def test_a_damaged_entry_is_refused_naming_key_and_rank_and_compiled_here(tmp_path):
    outs = run_ranks(FAKE_RANK, 4, two_hosts(tmp_path), tmp_path / "sync", mode="corrupt:1")
    planned = check_shards(outs, 4)
    damaged = planned[1]  # rank 1's first key: its bytes were changed on the way
    for rank in (2, 3):  # the other host refuses it, and compiles it itself
        r = outs[rank]["report"]
        assert len(r["refused"]) == 1 and r["refused"][0].startswith(f"{damaged} from rank 1: "), r["refused"]
        assert "checksum" in r["refused"][0] or "SHA-256" in r["refused"][0], r["refused"]
        assert r["loaded_from_disk"] + r["compiled"] == len(planned), r
    assert sorted(outs[2]["report"]["compiled_keys"] + outs[3]["report"]["compiled_keys"]).count(damaged) == 1
    for rank in (0, 1):  # rank 1's host mate reads its cache, not its payload
        assert outs[rank]["report"]["refused"] == [], outs[rank]["report"]


def test_a_rank_that_cannot_compile_fails_every_rank_naming_it(tmp_path):
    # Rank 1's compiler answers --version as the real one (the same keys) and fails every compile.
    cxx = tmp_path / "bin" / "c++"
    cxx.parent.mkdir()
    cxx.write_text('#!/bin/sh\ncase "$1" in --version|-dumpmachine) exec c++ "$@";; esac\necho "broken" >&2\nexit 1\n')
    cxx.chmod(0o755)
    outs = run_ranks(FAKE_RANK, 2, [tmp_path / "a", tmp_path / "b"], tmp_path / "sync", cps=200,
                     rank_env={1: {"HCWARM_CXX": str(cxx)}}, ok=False)
    for rank, out in enumerate(outs):
        assert out["error"].startswith("CompileError: kernel exchange: rank 1 failed to build "), out
        assert "(key " in out["error"], out
    # The failing rank reached the gather all the same: nobody waited for it.
    assert [c[0] for c in outs[0]["calls"]].count("gather") == 1


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
    [out] = run_ranks(FAKE_RANK, 1, [tmp_path / "cache"], tmp_path / "sync", mode=mode)
    assert out.get("error", "").startswith("ValueError") and message in out["error"], out
    assert not [c for c in out["calls"] if c[0] in ("make_gather", "gather")]
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("manifest.json"))


GLOO_RANK = textwrap.dedent("""
    import json, os, sys, time
    import torch.distributed as dist
    import hcwarm, hcwarm._group
    rank, world, cache, sync, cps, mode = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4],
                                           int(sys.argv[5]), sys.argv[6])
    cfg = json.loads(sys.argv[7])
    dist.init_process_group("gloo", init_method="file://" + sync + "/init", rank=rank, world_size=world)
    if mode == "die:%d" % rank:  # this rank stops in the middle of the exchange
        real = hcwarm._group.make_gather
        def make_gather(*a):
            g = real(*a)
            def gather(mine):
                os._exit(3)
            return gather
        hcwarm._group.make_gather = make_gather
    if mode == "as-nccl":  # a group whose backend moves no CPU tensors: the bytes go over a gloo side group
        dist.get_backend = lambda group=None: "nccl"
    t0 = time.monotonic()
    out = {"calls": []}
    try:
        r = hcwarm.prewarm(cfg, chunked_prefill_size=cps, device="cpu", num_sms=16, cache_dir=cache,
                           group=dist.group.WORLD)
        out["report"] = r.as_dict()
        out["planned"] = hcwarm.get_context("cpu").planned_keys("config dict", json.dumps(cfg), cps, 1, False,
                                                                True, False)
    except hcwarm.HcwarmError as e:
        out["error"] = type(e).__name__ + ": " + str(e)
    out["seconds"] = time.monotonic() - t0
    print(json.dumps(out), flush=True)
    os._exit(0)  # not destroy_process_group: a peer may be gone
""")

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="PyTorch is not installed")


@needs_torch
def test_a_real_gloo_group_over_two_hosts_compiles_each_key_once(tmp_path):
    caches = two_hosts(tmp_path)
    outs = run_ranks(GLOO_RANK, 4, caches, tmp_path / "sync")
    planned = check_shards(outs, 4)
    check_every_key_once(outs, planned)
    again = run_ranks(GLOO_RANK, 4, caches, tmp_path / "sync-again")
    check_every_key_once(again, planned, restart=True)


@needs_torch
def test_a_group_that_is_not_gloo_exchanges_over_a_gloo_side_group(tmp_path):
    outs = run_ranks(GLOO_RANK, 2, [tmp_path / "a", tmp_path / "b"], tmp_path / "sync", cps=200, mode="as-nccl")
    planned = check_shards(outs, 2)
    check_every_key_once(outs, planned)


@needs_torch
def test_a_rank_killed_mid_exchange_fails_the_others_within_the_bound(tmp_path):
    timeout_s = 20
    outs = run_ranks(GLOO_RANK, 3, [tmp_path / "a", tmp_path / "b", tmp_path / "c"], tmp_path / "sync", cps=200,
                     mode="die:1", rank_env={r: {"HCWARM_GROUP_TIMEOUT_S": str(timeout_s)} for r in range(3)},
                     ok=False)
    assert outs[1]["returncode"] == 3
    for rank in (0, 2):
        out = outs[rank]
        assert out["returncode"] == 0, out
        assert out["error"].startswith(f"WaitTimeoutError: kernel exchange: rank {rank} of 3 did not get "), out
        assert f"HCWARM_GROUP_TIMEOUT_S={timeout_s}" in out["error"], out
        assert out["seconds"] < timeout_s + 60, out  # the shard's compiles, then at most the bound


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
