"""prewarm() on the CPU backend, each case that warms in a fresh process (a context's settings are
per process); configs refused before anything is warmed are checked in this one.

A small model (hidden 1024, 16 SMs planned) has 7 split buckets below 600
tokens (21 keys: each bucket with the residual, with the first layer's
embedding and at a sublayer boundary as input), so the plan, the disk cache and the ready/strict/no-JIT rules are
exercised with real host compiles in a few seconds.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

import hcwarm

CONFIG = {"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 1024, "hc_mult": 4, "num_hidden_layers": 2,
          "sliding_window": 128}

SCRIPT = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import hcwarm
    sys.path.insert(0, {tests!r})
    from numerics import random_inputs
    cfg, mode, tokens = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
    out = {{}}
    try:
        r = hcwarm.prewarm(cfg, chunked_prefill_size=600, device="cpu", num_sms=16,
                           strict_warmup=(mode == "strict"), jit=(mode != "nojit"))
        out["report"] = r.as_dict()
        rng = np.random.default_rng(0)
        for t in tokens:  # a negative count: that many tokens, without the norm weight
            residual, fn, scale, base, w = random_inputs(rng, abs(t), 4, 1024)
            hcwarm.hc_pre(residual, fn, scale, base, w if t > 0 else None)
        # A tiered miss compiles in the background: wait (bounded) for it to be counted.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            s = hcwarm.stats("cpu")
            if s["served_by_generic"] == 0 or s["background_compiled"] + s["background_failed"] > 0:
                break
            time.sleep(0.05)
        out["compiles_after_ready"] = hcwarm.compiles_after_ready("cpu")
        out["background_compiles_after_ready"] = hcwarm.background_compiles_after_ready("cpu")
        out["stats"] = hcwarm.stats("cpu")
    except hcwarm.HcwarmError as e:
        out["error"] = type(e).__name__ + ": " + str(e)
    print(json.dumps(out))
""")


def run(tmp_path, mode, tokens, cache, tiered=False, config=CONFIG):
    # Untiered by default: a missed bucket then compiles in the call, so the counts are exact when it returns.
    env = dict(os.environ, HCWARM_CACHE_DIR=str(cache), HCWARM_LOG_LEVEL="error",
               HCWARM_TIERED="1" if tiered else "0")
    script = SCRIPT.format(tests=os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.run([sys.executable, "-c", script, json.dumps(config), mode, json.dumps(tokens)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


# Both ends of every bucket of [1, 600] at 16 SMs (grid = ceil(T / 64)), and a few between.
KEYS = 7 * 3  # buckets x (residual, embedding, boundary)
TOKENS = [1, 64, 65, 128, 129, 192, 193, 256, 257, 320, 321, 512, 513, 600, 17, 300, 450]


def test_prewarm_covers_every_bucket_then_loads_from_disk(tmp_path):
    cache = tmp_path / "cache"
    cold = run(tmp_path, "plain", TOKENS, cache)
    assert "error" not in cold, cold
    r = cold["report"]
    assert r["token_counts"] == [600, 512, 320, 256, 192, 128, 64], r
    assert r["max_num_tokens"] == 600 and r["num_sms"] == 16 and r["skipped"] == ""
    # CONFIG leaves out the fields below: each default is reported.
    assert r["defaults"] == ["hc_sinkhorn_iters=20", "hc_eps=1e-06", "rms_norm_eps=1e-06",
                             "num_nextn_predict_layers=0"], r
    assert r["keys"] == KEYS and r["compiled"] == KEYS and r["loaded_from_disk"] == 0
    assert cold["compiles_after_ready"] == 0
    # The restart's config leaves out sliding_window: every DeepSeek V4 layer runs hc_pre whatever
    # its attention, so it plans the same keys (all on disk now) and reports the default.
    no_swa = {k: v for k, v in CONFIG.items() if k != "sliding_window"}
    warm = run(tmp_path, "plain", [1, 600], cache, config=no_swa)
    w = warm["report"]
    assert w["compiled"] == 0 and w["loaded_from_disk"] == w["keys"] == KEYS and w["skipped"] == "", warm
    assert w["token_counts"] == r["token_counts"] and w["defaults"] == r["defaults"] + ["sliding_window=none"], w
    assert warm["compiles_after_ready"] == 0


def test_a_bucket_warmup_missed_is_counted_or_refused(tmp_path):
    cache = tmp_path / "cache"
    # The plan warms calls with a norm weight; one without needs a kernel it did not build.
    loose = run(tmp_path, "plain", [64, 700, -64], cache)
    assert loose["compiles_after_ready"] == 1, loose
    strict = run(tmp_path, "strict", [64, -64], tmp_path / "fresh")
    assert "HCWARM_STRICT_WARMUP" in strict.get("error", ""), strict
    both = run(tmp_path, "plain", [-64, 64], cache)
    assert both["compiles_after_ready"] == 0, both  # the first run's compile is on disk now
    s = loose["stats"]
    assert s["waited_for_compile"] == 1 and s["compile_wait_s"] > 0 and s["served_by_generic"] == 0, s
    # Untiered, the miss compiled in the call's own path: a foreground compile, none in the background.
    assert s["compiles_after_ready"] == 1 and s["background_compiles_after_ready"] == 0, s
    assert loose["background_compiles_after_ready"] == 0


def test_tiered_a_missed_bucket_is_served_generically_without_waiting(tmp_path):
    r = run(tmp_path, "plain", [64, -64, -64], tmp_path / "cache", tiered=True)
    assert "error" not in r, r
    s = r["stats"]
    for key in ("compiled", "loaded_from_disk", "memory_hits", "compiles_after_ready",
                "background_compiles_after_ready", "compile_seconds", "failed", "waited_for_compile",
                "compile_wait_s", "served_by_generic", "background_compiled", "background_failed"):
        assert key in s, (key, s)
    assert s["waited_for_compile"] == 0 and s["compile_wait_s"] == 0, s
    # The miss compiled in the background worker, counted there and not as a call's compile.
    assert s["compiles_after_ready"] == 0 and r["compiles_after_ready"] == 0, s
    assert s["background_compiles_after_ready"] == s["background_compiled"] == 1, s
    assert r["background_compiles_after_ready"] == 1
    # The first call without a norm weight ran generically; the second too, unless the compile had landed.
    assert 1 <= s["served_by_generic"] <= 2, s
    assert s["background_failed"] == 0, s
    strict = run(tmp_path, "strict", [64, -64], tmp_path / "fresh", tiered=True)
    assert "HCWARM_STRICT_WARMUP" in strict.get("error", ""), strict  # tiering does not apply


def test_no_jit_mode_needs_a_built_cache(tmp_path):
    cache = tmp_path / "cache"
    refused = run(tmp_path, "nojit", [], cache)
    assert refused.get("error", "").startswith("NotWarmedError"), refused
    assert "HCWARM_JIT=off" in refused["error"] and "mhc_pre" in refused["error"]
    run(tmp_path, "plain", [], cache)  # fills the cache
    served = run(tmp_path, "nojit", [1, 600], cache)
    assert "error" not in served, served
    assert served["report"]["loaded_from_disk"] == KEYS and served["report"]["compiled"] == 0


def test_prewarm_applies_dp_attention_division_once(tmp_path):
    code = textwrap.dedent("""
        import hcwarm, json
        r = hcwarm.prewarm("dsv4-flash", chunked_prefill_size=1024, dp_size=4, enable_dp_attention=True,
                           device="cpu", variant="generic")
        print(json.dumps(r.as_dict()))
    """)
    env = dict(os.environ, HCWARM_CACHE_DIR="", HCWARM_LOG_LEVEL="error")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["max_num_tokens"] == 256 and r["keys"] == 0, r


REQUIRED = {"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 1024, "hc_mult": 4, "num_hidden_layers": 2}


@pytest.mark.parametrize("missing", sorted(REQUIRED))
def test_a_missing_required_field_is_named(missing):
    config = {k: v for k, v in REQUIRED.items() if k != missing}
    with pytest.raises(hcwarm.InvalidArgumentError, match=f"\"{missing}\" is missing"):
        hcwarm.prewarm(config, device="cpu")


def test_an_architecture_other_than_deepseek_v4_is_refused():
    config = dict(REQUIRED, architectures=["LlamaForCausalLM"])
    with pytest.raises(hcwarm.InvalidArgumentError, match="architectures.*LlamaForCausalLM"):
        hcwarm.prewarm(config, device="cpu")


def test_prewarm_reports_its_peak_memory(tmp_path):
    # Each bucket runs on one token: the peak above the context's own stays far below the 256 MB bound.
    small = dict(CONFIG, hidden_size=256)
    r = run(tmp_path, "plain", [], tmp_path / "cache", config=small)["report"]
    assert isinstance(r["peak_bytes"], int) and 0 <= r["peak_bytes"] < 256 << 20, r
