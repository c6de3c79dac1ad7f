"""check_coverage() after prewarm() on the CPU backend, each case in a fresh process (the
context's settings and its last prewarm are per process): it passes after a prewarm of the
calls it checks, raises NotWarmedError naming the kernels a prewarm did not load, and refuses
to run before any prewarm."""
import json
import os
import subprocess
import sys
import textwrap

CONFIG = {"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 256, "hc_mult": 4, "num_hidden_layers": 2,
          "sliding_window": 128}

# 8 SMs, 160 tokens, K = 1024: two split buckets (4 splits up to 128 tokens, 2 above).
SCRIPT = textwrap.dedent("""
    import json, sys
    import hcwarm
    cfg, prewarm_norm, check_norm = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
    out = {}
    try:
        if prewarm_norm is not None:
            hcwarm.prewarm(cfg, chunked_prefill_size=160, device="cpu", num_sms=8, fused_norm=prewarm_norm)
        r = hcwarm.check_coverage("cpu", fused_norm=check_norm, raise_on_miss=False)
        out["report"] = {"calls": r.calls, "token_counts": r.token_counts, "missing": r.missing, "ok": r.ok,
                         "max_num_tokens": r.max_num_tokens}
        hcwarm.check_coverage("cpu", fused_norm=check_norm)
        out["compiles_after_ready"] = hcwarm.compiles_after_ready("cpu")
    except hcwarm.HcwarmError as e:
        out["error"] = type(e).__name__ + ": " + str(e)
    print(json.dumps(out))
""")


def run(tmp_path, prewarm_norm, check_norm):
    env = dict(os.environ, HCWARM_CACHE_DIR=str(tmp_path / "cache"), HCWARM_LOG_LEVEL="error", HCWARM_TIERED="0")
    p = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(CONFIG), json.dumps(prewarm_norm),
                        json.dumps(check_norm)], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_check_coverage_passes_after_prewarm(tmp_path):
    out = run(tmp_path, True, True)
    assert "error" not in out, out
    r = out["report"]
    assert r["ok"] and r["missing"] == []
    assert r["max_num_tokens"] == 160
    assert sorted(r["token_counts"]) == [1, 129]  # the smallest T of each bucket
    assert r["calls"] == 2 * 5  # per bucket: hc_pre on streams, on the embedding and at a boundary, hc_post, hc_head
    assert out["compiles_after_ready"] == 0


def test_check_coverage_names_the_kernels_prewarm_did_not_load(tmp_path):
    out = run(tmp_path, False, True)  # warmed the calls without a norm weight, checked with one
    r = out["report"]
    assert not r["ok"]
    assert any("mhc_pre (input=residual, fused norm) num_splits=4" in m for m in r["missing"]), r["missing"]
    assert any("input=embed" in m for m in r["missing"]), r["missing"]
    assert out["error"].startswith("NotWarmedError: warmup missed"), out
    assert "mhc_pre" in out["error"]


def test_check_coverage_before_any_prewarm_is_refused(tmp_path):
    out = run(tmp_path, None, True)
    assert "prewarm" in out["error"] and out["error"].startswith("InvalidArgumentError"), out
