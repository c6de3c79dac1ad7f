"""token_count_representatives() and plan() against a brute-force split rule, and plan()'s keys
against what prewarm() compiles. No PyTorch, no GPU: the plan is the C++ one either way.

The brute force is the rule of docs/MATH.md, section 4 as written: num_splits for every T
once, then, as max_num_tokens M grows by one, the bucket of T = M gains its new largest
member, so every M in [1, 16384] is checked in one pass.
"""
import bisect
import json
import os
import subprocess
import sys
import textwrap

import pytest

import hcwarm

MAX_M = 16384
CASES = [(k, sms) for k in (4 * 4096, 4 * 7168) for sms in (132, 148)]


def num_splits(t, k, sms):
    grid = (t + 63) // 64
    return max(1, min(sms // max(grid, 1), (k + 63) // 64 // 4))


def brute_force(k, sms):
    """(M, buckets of [1, M]) for M = 1..MAX_M; a bucket is (num_splits, min T, max T), by num_splits ascending."""
    first, last, order = {}, {}, []
    for m in range(1, MAX_M + 1):
        s = num_splits(m, k, sms)
        if s not in first:
            first[s] = m
            bisect.insort(order, s)
        last[s] = m
        yield m, [(s, first[s], last[s]) for s in order]


@pytest.mark.parametrize("k,sms", CASES)
def test_representatives_follow_the_split_rule_for_every_max_num_tokens(k, sms):
    for m, buckets in brute_force(k, sms):
        want = [b[2] for b in buckets]
        got = hcwarm.token_count_representatives(m, k, sms)
        if got != want or hcwarm._core.split_buckets(m, k, sms) != buckets:
            assert (m, got, hcwarm._core.split_buckets(m, k, sms)) == (m, want, buckets)


def test_reference_example_and_empty_range():
    # docs/REFERENCE: K = 28672, 132 SMs, M = 16384.
    assert hcwarm.token_count_representatives(16384, 28672, 132) == [
        16384, 4224, 2816, 2112, 1664, 1408, 1152, 1024, 896, 832, 768, 704, 640, 576, 512, 448, 384, 320, 256, 192,
        128, 64]
    assert hcwarm.token_count_representatives(0, 28672, 132) == []
    assert hcwarm.token_count_representatives(-5, 28672, 132) == []


def test_default_num_sms_follows_the_context_order(monkeypatch):
    torch = sys.modules.get("torch")
    if hcwarm.cuda_device_present() or (torch is not None and torch.cuda.is_available()):
        pytest.skip("a CUDA device decides the SM count here")
    monkeypatch.delenv("HCWARM_NUM_SMS", raising=False)
    assert hcwarm.token_count_representatives(8192, 16384) == hcwarm.token_count_representatives(8192, 16384, 132)
    monkeypatch.setenv("HCWARM_NUM_SMS", "148")
    assert hcwarm.token_count_representatives(8192, 16384) == hcwarm.token_count_representatives(8192, 16384, 148)


@pytest.mark.parametrize("call,error,name", [
    (lambda: hcwarm.token_count_representatives("16k", 16384, 132), TypeError, "max_num_tokens"),
    (lambda: hcwarm.token_count_representatives(True, 16384, 132), TypeError, "max_num_tokens"),
    (lambda: hcwarm.token_count_representatives(1 << 64, 16384, 132), ValueError, "max_num_tokens"),
    (lambda: hcwarm.token_count_representatives(64, 16384.0, 132), TypeError, "hc_hidden_size"),
    (lambda: hcwarm.token_count_representatives(64, 0, 132), ValueError, "hc_hidden_size"),
    (lambda: hcwarm.token_count_representatives(64, 16384, 0), ValueError, "num_sms"),
    (lambda: hcwarm.token_count_representatives(64, 16384, 1.5), TypeError, "num_sms"),
    (lambda: hcwarm.plan(3.5, device="cpu"), TypeError, "config"),
    (lambda: hcwarm.plan("dsv4-flash", chunked_prefill_size="16k", device="cpu"), TypeError, "chunked_prefill_size"),
    (lambda: hcwarm.plan("dsv4-flash", dp_size=0, device="cpu"), ValueError, "dp_size"),
    (lambda: hcwarm.plan("dsv4-flash", num_sms=-1, device="cpu"), ValueError, "num_sms"),
    (lambda: hcwarm.plan("dsv4-flash", fused_norm="yes", device="cpu"), TypeError, "fused_norm"),
    (lambda: hcwarm.plan("dsv4-flash", device="tpu"), ValueError, "device"),
    (lambda: hcwarm.plan({"architectures": ["DeepseekV4ForCausalLM"], "hc_mult": 4, "num_hidden_layers": 1},
                         device="cpu"), hcwarm.InvalidArgumentError, "hidden_size"),
])
def test_bad_arguments_are_named(call, error, name):
    with pytest.raises(error, match=name):
        call()


# In a fresh process: plan() with an explicit num_sms must not meet a context other tests made.
PLAN_SCRIPT = textwrap.dedent("""
    import json, sys
    import hcwarm
    out = []
    for hidden, sms, m in json.loads(sys.argv[1]):
        cfg = {"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": hidden, "hc_mult": 4,
               "num_hidden_layers": 1, "sliding_window": 128}
        p = hcwarm.plan(cfg, chunked_prefill_size=m, num_sms=sms, device="cpu")
        out.append([p.max_num_tokens, p.num_sms, p.buckets, p.representatives, len(p.keys)])
    print(json.dumps(out))
""")


def test_plan_buckets_and_representatives_follow_the_split_rule():
    ms = [1, 64, 65, 1000, 4224, 4225, 8192, MAX_M]
    expected = {}
    for k, sms in CASES:
        for m, buckets in brute_force(k, sms):
            if m in ms:
                expected[(k // 4, sms, m)] = buckets
    cases = sorted(expected)
    env = dict(os.environ, HCWARM_CACHE_DIR="", HCWARM_LOG_LEVEL="error")
    p = subprocess.run([sys.executable, "-c", PLAN_SCRIPT, json.dumps(cases)], env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    for (hidden, sms, m), (max_tokens, plan_sms, buckets, reps, keys) in zip(cases, json.loads(p.stdout)):
        want = expected[(hidden, sms, m)]
        assert (max_tokens, plan_sms) == (m, sms)
        assert [tuple(b) for b in buckets] == want, (hidden, sms, m)
        assert reps == [b[2] for b in want] == hcwarm.token_count_representatives(m, 4 * hidden, sms)
        assert keys >= len(want)  # at least one hc_pre key per bucket


# plan(), then prewarm() on the same CPU context: the keys it compiles are the plan's.
PREWARM_SCRIPT = textwrap.dedent("""
    import json
    import hcwarm
    cfg = {"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 256, "hc_mult": 4, "num_hidden_layers": 1}
    before = hcwarm.plan(cfg, chunked_prefill_size=320, num_sms=8, device="cpu").as_dict()
    r = hcwarm.prewarm(cfg, chunked_prefill_size=320, device="cpu", num_sms=8)
    after = hcwarm.plan(cfg, chunked_prefill_size=320, device="cpu").as_dict()
    try:
        hcwarm.plan(cfg, num_sms=16, device="cpu")
        clash = ""
    except ValueError as e:
        clash = str(e)
    print(json.dumps({"before": before, "after": after, "report": r.as_dict(), "clash": clash}))
""")


def test_plan_keys_are_what_prewarm_compiles(tmp_path):
    env = dict(os.environ, HCWARM_CACHE_DIR=str(tmp_path / "cache"), HCWARM_LOG_LEVEL="error")
    env.pop("HCWARM_NUM_SMS", None)
    p = subprocess.run([sys.executable, "-c", PREWARM_SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    before, after, r = out["before"], out["after"], out["report"]
    # hc 4 x D 256, 8 SMs, [1, 320]: buckets 1..128 (4 splits), 129..256 (2), 257..320 (1).
    assert before["buckets"] == [[1, 257, 320], [2, 129, 256], [4, 1, 128]]
    assert before["representatives"] == r["token_counts"] == [320, 256, 128]
    assert (before["max_num_tokens"], before["num_sms"]) == (r["max_num_tokens"], r["num_sms"]) == (320, 8)
    assert sorted(before["keys"]) == sorted(r["compiled_keys"]) and len(before["keys"]) == r["keys"] == 9
    assert before["defaults"] == r["defaults"] and "sliding_window=none" in r["defaults"]
    assert before["skipped"] == r["skipped"] == ""
    assert after == before  # the context prewarm made plans the same
    assert "num_sms" in out["clash"] and "8 SMs" in out["clash"]
