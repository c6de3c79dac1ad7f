"""The C++ operator library (torch.ops.hcwarm.* in C++) against the package's Python operators.

Where the package was built with PyTorch, torch.ops.hcwarm.* are C++ kernels; with
HCWARM_TORCH_CPP_OPS=0, or a library built for another PyTorch, they are the Python
definitions. Both must be the same operators: the same schemas, the same bits for the
same calls, the same error types and messages for the same bad calls, through hcwarm.*
and torch.ops.hcwarm.* (each implementation runs in a fresh process; CPU tensors, the
CPU backend). Needs PyTorch and a package built with it; skips otherwise.
"""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
import hcwarm  # noqa: E402
from hcwarm import _torch_cpp, _torch_ops  # noqa: E402

pytestmark = pytest.mark.skipif(not _torch_ops.CPP, reason=f"C++ operators not loaded: {_torch_cpp.reason}")

# Each case: a call on seeded CPU inputs, printed as the outputs' bytes (hex of a hash) or the error's type and text.
CALLS = textwrap.dedent("""
    import hashlib, json, sys
    import torch, hcwarm
    from hcwarm import _torch_ops
    g = torch.Generator().manual_seed(3)
    t, hc, d = 5, 4, 256
    r = torch.randn(t, hc, d, generator=g).to(torch.bfloat16)
    e = torch.randn(t, d, generator=g).to(torch.bfloat16)
    x = torch.randn(t, d, generator=g).to(torch.bfloat16)
    fn = torch.randn(24, hc * d, generator=g) * 0.05
    sc, b = torch.rand(3, generator=g) + 0.2, torch.randn(24, generator=g) * 0.2
    w = (1 + 0.1 * torch.randn(d, generator=g)).to(torch.bfloat16)
    post, comb = torch.rand(t, hc, generator=g), torch.rand(t, hc, hc, generator=g) / hc
    hfn, hsc, hb = torch.randn(hc, hc * d, generator=g) * 0.05, torch.ones(1), torch.zeros(hc)
    C = (20, 1e-6, 1e-6, 1e-6, 2.0)
    ops = torch.ops.hcwarm
    def outs():
        return (torch.empty(t, d, dtype=torch.bfloat16), torch.empty(t, hc), torch.empty(t, hc, hc))
    cases = {
        "pre": lambda: hcwarm.hc_pre(r, fn, sc, b, w),
        "pre no norm": lambda: hcwarm.hc_pre(r, fn, sc, b),
        "pre embedding": lambda: hcwarm.hc_pre(e, fn, sc, b, w),
        "pre out": lambda: hcwarm.hc_pre(r, fn, sc, b, w, out=outs()),
        "pre op": lambda: ops.hc_pre(r, fn, sc, b, w, *C),
        "post": lambda: hcwarm.hc_post(x, r, post, comb),
        "post op out": lambda: ops.hc_post_out(x, r, post, comb, r.clone()),
        "post_pre": lambda: hcwarm.hc_post_pre(x, r, post, comb, fn, sc, b, w),
        "post_pre op": lambda: ops.hc_post_pre(x, r, post, comb, fn, sc, b, w, *C),
        "head": lambda: hcwarm.hc_head(r, hfn, hsc, hb),
        "head op": lambda: ops.hc_head(r, hfn, hsc, hb, 1e-6, 1e-6),
        "empty": lambda: hcwarm.hc_pre(r[:0], fn, sc, b, w),
        "bad dtype": lambda: hcwarm.hc_pre(r.float(), fn, sc, b, w),
        "bad fn": lambda: hcwarm.hc_pre(r, fn[:, :10], sc, b, w),
        "bad scale": lambda: ops.hc_pre(r, fn, sc[:2], b, w, *C),
        "bad norm": lambda: hcwarm.hc_pre(r, fn, sc, b, w[:5]),
        "bad embedding fn": lambda: hcwarm.hc_pre(e, fn[:20], sc, b, w),
        "bad rank": lambda: hcwarm.hc_pre(r[None], fn, sc, b, w),
        "broadcast": lambda: hcwarm.hc_pre(r[:, :1].expand(t, hc, d), fn, sc, b, w),
        "not contiguous": lambda: hcwarm.hc_post(torch.randn(d, t).to(torch.bfloat16).t(), r, post, comb),
        "bad out shape": lambda: hcwarm.hc_pre(r, fn, sc, b, w, out=(torch.empty(t, 3, dtype=torch.bfloat16),
                                                                     torch.empty(t, hc), torch.empty(t, hc, hc))),
        "bad out type": lambda: hcwarm.hc_pre(r, fn, sc, b, w, out=outs()[:2]),
        "bad eps": lambda: hcwarm.hc_pre(r, fn, sc, b, w, hc_eps=-1),
        "nan eps": lambda: ops.hc_pre(r, fn, sc, b, w, 20, 1e-6, float("nan"), 1e-6, 2.0),
        "bool eps": lambda: hcwarm.hc_pre(r, fn, sc, b, w, rms_eps=True),
        "iters": lambda: hcwarm.hc_pre(r, fn, sc, b, w, sinkhorn_iters=0),
        "post_mult": lambda: hcwarm.hc_post_pre(x, r, post, comb, fn, sc, b, w, post_mult=float("inf")),
        "post_pre embedding": lambda: hcwarm.hc_post_pre(x, e, post, comb, fn, sc, b, w),
        "post_pre aliased gates": lambda: hcwarm.hc_post_pre(x, r, post, comb, fn, sc, b, w,
                                                             out=(torch.empty(t, d, dtype=torch.bfloat16), post,
                                                                  torch.empty(t, hc, hc))),
        "post bad comb": lambda: hcwarm.hc_post(x, r, post, comb[:, :2]),
        "head bad fn": lambda: hcwarm.hc_head(r, hfn[:2], hsc, hb),
        "head bad eps": lambda: ops.hc_head(r, hfn, hsc, hb, 0.0, 1e-6),
        "head out dtype": lambda: hcwarm.hc_head(r, hfn, hsc, hb, out=torch.empty(t, d)),
    }
    def digest(v):
        ts = v if isinstance(v, (tuple, list)) else (v,)
        h = hashlib.sha256()
        for x in ts:
            h.update(str((tuple(x.shape), x.dtype)).encode()); h.update(x.contiguous().view(torch.uint8).numpy().tobytes())
        return h.hexdigest()
    res = {}
    for name, call in cases.items():
        try:
            res[name] = ["ok", digest(call())]
        except Exception as ex:
            res[name] = [type(ex).__name__, str(ex).splitlines()[0]]
    print(json.dumps({"cpp": _torch_ops.CPP, "results": res}))
""")


def run_calls(tmp_path, **env):
    e = dict(os.environ, HCWARM_CACHE_DIR=str(tmp_path / "cache"), HCWARM_LOG_LEVEL="error", **env)
    p = subprocess.run([sys.executable, "-c", CALLS], env=e, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_the_cpp_and_python_operators_agree_on_every_call_and_error(tmp_path):
    cpp = run_calls(tmp_path)
    py = run_calls(tmp_path, HCWARM_TORCH_CPP_OPS="0")
    assert cpp["cpp"] and not py["cpp"]
    for name, want in py["results"].items():
        assert cpp["results"][name] == want, name
    # The table is not vacuous: both kinds of outcome are in it.
    kinds = {v[0] for v in py["results"].values()}
    assert {"ok", "TypeError", "ValueError"} <= kinds, kinds


def test_meta_tensors_get_the_output_shapes():
    # The C++ operators' Meta kernels (the Python operators refuse meta tensors; both serve FakeTensor).
    r = torch.empty(6, 4, 256, dtype=torch.bfloat16, device="meta")
    y, post, comb = torch.ops.hcwarm.hc_pre(r, torch.empty(24, 1024, device="meta"), torch.empty(3, device="meta"),
                                            torch.empty(24, device="meta"), None, 20, 1e-6, 1e-6, 1e-6, 2.0)
    assert (y.shape, post.shape, comb.shape) == ((6, 256), (6, 4), (6, 4, 4)) and y.device.type == "meta"
    with pytest.raises(ValueError, match=r"fn: expected shape \(24, 1024\), got \(24, 1000\)"):
        torch.ops.hcwarm.hc_pre(r, torch.empty(24, 1000, device="meta"), torch.empty(3, device="meta"),
                                torch.empty(24, device="meta"), None, 20, 1e-6, 1e-6, 1e-6, 2.0)


def test_the_schemas_are_the_python_definitions():
    for name, schema in _torch_ops.SCHEMAS.items():
        got = getattr(torch.ops.hcwarm, name).default._schema
        assert str(got) == str(torch._C.parse_schema(f"hcwarm::{schema}")), name
    assert set(_torch_ops.SCHEMAS) == set(_torch_cpp.names())


def test_a_library_built_for_another_pytorch_is_not_loaded(tmp_path):
    pkg = tmp_path / "pkg"
    shutil.copytree(os.path.dirname(hcwarm.__file__), pkg / "hcwarm", symlinks=False)
    (pkg / "hcwarm" / "libhcwarm_torch_ops.txt").write_text(f"torch 0.0.1\nhcwarm {hcwarm.__version__}\n")
    code = "import hcwarm; from hcwarm import _torch_ops, _torch_cpp; print(_torch_ops.CPP); print(_torch_cpp.reason)"
    p = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(pkg)), capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    cpp, reason = p.stdout.strip().splitlines()[-2:]
    assert cpp == "False"
    assert "built for PyTorch 0.0.1" in reason and "rebuild" in reason


def test_the_switch_turns_the_library_off(tmp_path):
    code = "from hcwarm import _torch_ops, _torch_cpp; print(_torch_ops.CPP, '|', _torch_cpp.reason)"
    p = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, HCWARM_TORCH_CPP_OPS="0"),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.strip().splitlines()[-1] == "False | HCWARM_TORCH_CPP_OPS=0"


def test_runtime_errors_keep_their_hcwarm_type(tmp_path):
    # HCWARM_JIT=off with an empty cache: the CPU kernel may not be built, which is NotWarmedError.
    code = textwrap.dedent("""
        import torch, hcwarm
        r = torch.zeros(2, 4, 256, dtype=torch.bfloat16)
        a = (r, torch.zeros(24, 1024), torch.ones(3), torch.zeros(24))
        try:
            hcwarm.hc_pre(*a)
        except hcwarm.NotWarmedError as e:
            print("hcwarm.*", type(e).__name__)
        try:
            torch.ops.hcwarm.hc_pre(*a, None, 20, 1e-6, 1e-6, 1e-6, 2.0)
        except RuntimeError as e:
            print("torch.ops", str(e).split(":")[0])
    """)
    env = dict(os.environ, HCWARM_JIT="off", HCWARM_CACHE_DIR=str(tmp_path / "empty"), HCWARM_LOG_LEVEL="error")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.split("\n")[:2] == ["hcwarm.* NotWarmedError", "torch.ops NotWarmedError"], p.stdout


def test_torch_compile_fullgraph_traces_the_cpp_operators():
    # hcwarm.* calls the operators' C++ entry in eager mode and the OpOverload while tracing.
    g = torch.Generator().manual_seed(4)
    fn, scale, base = torch.randn(24, 1024, generator=g) * 0.05, torch.rand(3, generator=g) + 0.2, torch.zeros(24)
    w = torch.ones(256, dtype=torch.bfloat16)

    def f(residual):
        y, post, comb = hcwarm.hc_pre(residual, fn, scale, base, w)
        return hcwarm.hc_post(torch.nn.functional.silu(y), residual, post, comb)

    residual = torch.randn(7, 4, 256, generator=g).to(torch.bfloat16)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(residual), f(residual))
