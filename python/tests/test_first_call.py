"""The first call after prewarm() is a steady call: prewarm() runs every public entry point once.

Each public op (hcwarm.hc_pre, ...; with PyTorch, every torch.ops.hcwarm.* operator too) registers
a pending flag that its first call clears. In a fresh process, before prewarm() every entry point is
pending and after it none is, with no kernel compiled after ready: an entry point added without a
warm call stays pending and fails here. Nothing is timed (bench/python/bench_ops.py --part calls
measures the first and steady calls). The signature cache of the torch route is checked too: a
call that differs from a cached one in any checked property is checked again, and named.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

import hcwarm

CONFIG = {"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 256, "hc_mult": 4, "num_hidden_layers": 2,
          "sliding_window": 128}

SCRIPT = textwrap.dedent("""
    import json, sys
    import hcwarm
    cfg, fused_norm, device = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
    before = hcwarm.first_calls_pending()
    settings = dict(num_sms=8) if device == "cpu" else {}
    report = hcwarm.prewarm(cfg, chunked_prefill_size=256, device=device, fused_norm=fused_norm, **settings)
    print(json.dumps({"before": before, "after": hcwarm.first_calls_pending(), "first_calls": report.first_calls,
                      "compiles_after_ready": hcwarm.compiles_after_ready(device),
                      "public": [n for n in hcwarm.__all__ if n.startswith("hc_")],
                      "operators": hcwarm._torch_ops.OPS if hcwarm.has_torch else []}))
""")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("first-call-cache")  # shared: the second process loads what the first compiled


def run_fresh(cache, fused_norm, device="cpu", config=CONFIG):
    env = dict(os.environ, HCWARM_CACHE_DIR=str(cache), HCWARM_LOG_LEVEL="error")
    p = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(config), json.dumps(fused_norm), device], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("fused_norm", [True, None])
def test_prewarm_leaves_no_entry_point_pending(cache, fused_norm):
    r = run_fresh(cache, fused_norm)
    expected = {f"hcwarm.{n}" for n in r["public"]} | set(r["operators"])
    assert expected <= set(r["before"]), "every public op starts pending"
    assert r["after"] == []
    assert expected <= set(r["first_calls"])
    assert r["compiles_after_ready"] == 0  # the warm calls ran only kernels prewarm loaded


@pytest.mark.gpu
def test_prewarm_on_cuda_leaves_no_entry_point_pending(cache):
    r = run_fresh(cache, True, device="cuda:0", config="dsv4-flash")
    assert r["operators"], "with PyTorch every operator is registered"
    assert set(r["operators"]) <= set(r["before"]) and r["after"] == []
    assert r["compiles_after_ready"] == 0


def test_every_public_op_and_operator_is_registered():
    names = set(hcwarm._first_call.names())
    assert {f"hcwarm.{n}" for n in hcwarm.__all__ if n.startswith("hc_")} <= names
    if hcwarm.has_torch:
        import torch

        assert set(hcwarm._torch_ops.OPS) <= names
        # Every operator in the namespace is one hcwarm defined (and so registered).
        defined = {"torch.ops.hcwarm." + s.name.split("::", 1)[1] for s in torch._C._jit_get_all_schemas()
                   if s.name.startswith("hcwarm::")}
        assert defined == set(hcwarm._torch_ops.OPS)


# ---- the torch route's checks, cached per signature (CPU tensors; needs PyTorch, not a GPU) ----

def _inputs(t=3, hc=4, d=256, seed=0):
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(seed)
    residual = torch.randn(t, hc, d, generator=g).to(torch.bfloat16)
    fn = torch.randn(hc * (2 + hc), hc * d, generator=g) * 1e-3
    scale = torch.rand(3, generator=g) + 0.2
    base = torch.randn(hc * (2 + hc), generator=g) * 0.1
    w = (1 + 0.1 * torch.randn(d, generator=g)).to(torch.bfloat16)
    return residual, fn, scale, base, w


def test_a_cached_signature_still_checks_what_changes_per_call():
    torch = pytest.importorskip("torch")
    residual, fn, scale, base, w = _inputs()
    y, post, comb = hcwarm.hc_pre(residual, fn, scale, base, w)  # the signature is now cached
    # Same shapes, dtypes and devices; not contiguous.
    wide = torch.zeros(3, 4, 512, dtype=torch.bfloat16)[..., ::2]
    with pytest.raises(ValueError, match="residual: expected a contiguous tensor"):
        hcwarm.hc_pre(wide, fn, scale, base, w)
    # Token counts that disagree between the input and the out buffers.
    short = (y[:2], post[:2], comb[:2])
    with pytest.raises(ValueError, match=r"out\[0\] \(y\)"):
        hcwarm.hc_pre(residual, fn, scale, base, w, out=short)
    # A dtype, a constant's type or a device never seen with this signature: the full check, named.
    with pytest.raises(TypeError, match="fn: expected dtype"):
        hcwarm.hc_pre(residual, fn.double(), scale, base, w)
    with pytest.raises(TypeError, match="sinkhorn_iters"):
        hcwarm.hc_pre(residual, fn, scale, base, w, sinkhorn_iters=True)
    with pytest.raises(ValueError, match="hc_eps"):
        hcwarm.hc_pre(residual, fn, scale, base, w, hc_eps=float("nan"))
    # hc_post: out of another token count, after a cached call.
    hcwarm.hc_post(y, residual, post, comb)
    with pytest.raises(ValueError, match="out: expected shape"):
        hcwarm.hc_post(y, residual, post, comb, out=torch.empty(2, 4, 256, dtype=torch.bfloat16))
    # hc_post_pre: the new gates written over the previous ones.
    hcwarm.hc_post_pre(y, residual, post, comb, fn, scale, base, w)
    with pytest.raises(ValueError, match="prev_post: must not be"):
        hcwarm.hc_post_pre(y, residual, post, comb, fn, scale, base, w, out=(y.clone(), post, comb.clone()))


def test_the_direct_route_and_the_operators_give_the_same_bits():
    torch = pytest.importorskip("torch")
    from torch.utils._python_dispatch import TorchDispatchMode

    class Record(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    residual, fn, scale, base, w = _inputs(t=5, seed=3)
    direct = hcwarm.hc_pre(residual, fn, scale, base, w)
    with Record() as rec:  # a dispatch mode must see the op: the call goes through torch.ops.hcwarm
        seen = hcwarm.hc_pre(residual, fn, scale, base, w)
    assert any("hcwarm.hc_pre" in op for op in rec.ops), rec.ops
    operator = torch.ops.hcwarm.hc_pre(residual, fn, scale, base, w, 20, 1e-6, 1e-6, 1e-6, 2.0)
    for a, b, c in zip(direct, seen, operator):
        assert torch.equal(a, b) and torch.equal(a, c)


def test_signature_table_is_bounded():
    pytest.importorskip("torch")
    from hcwarm import _torch_launch

    residual, fn, scale, base, w = _inputs(t=2)
    for i in range(3):  # the Python operators' launch (the C++ operators keep no table)
        _torch_launch.hc_pre(residual, fn, scale, base, w, None, (20, 1e-6, 1e-6, 1e-6, 2.0 + i))
    assert 0 < _torch_launch.signatures_kept() <= _torch_launch._MAX_SIGNATURES
