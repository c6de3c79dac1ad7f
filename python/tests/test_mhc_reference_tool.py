"""tools/mhc_reference.py as a command: generate -> reference or `hcwarm op hc-pre` -> compare.

NumPy only; the round trips through the CLI skip when build/src/hcwarm (or HCWARM_CLI) is absent.
"""
import contextlib
import io
import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

import mhc_reference as ref

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "mhc_reference.py")
CLI = os.environ.get("HCWARM_CLI", os.path.join(ROOT, "build", "src", "hcwarm"))

FORMS = [pytest.param(embed, norm, id=f"{'embed' if embed else 'streams'}-{'norm' if norm else 'nonorm'}")
         for embed in (False, True) for norm in (False, True)]


def command(*args):
    """The tool as a separate process, as a user runs it."""
    return subprocess.run([sys.executable, TOOL, *map(str, args)], capture_output=True, text=True, timeout=120)


def tool(*args):
    """The same command line, in this process (faster): returncode, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = ref.main([str(a) for a in args])
        except SystemExit as e:
            rc = e.code
    return SimpleNamespace(returncode=rc, stdout=out.getvalue(), stderr=err.getvalue())


def generate(d, embed, norm, tokens=5, hidden=64, seed=7, run=tool):
    flags = (["--embed"] if embed else []) + (["--norm"] if norm else [])
    r = run("--generate", d, "--tokens", tokens, "--hidden", hidden, "--seed", seed, *flags)
    assert r.returncode == 0, r.stderr
    return d


def load(d, name):
    return np.load(os.path.join(d, f"{name}.npy"))


def save(d, name, v):
    np.save(os.path.join(d, f"{name}.npy"), np.asarray(v, np.float32))


def bump_ulps(v, n):
    """v moved n bf16 ulps away from zero (v a bf16 value, not zero)."""
    bits = np.asarray(v, np.float32).view(np.uint32) + np.uint32(n << 16)
    return bits.view(np.float32)


@pytest.mark.parametrize("embed,norm", FORMS)
def test_generate_then_reference_compares_ok(tmp_path, embed, norm):
    src = generate(tmp_path / "in", embed, norm, run=command)
    assert load(src, "residual").ndim == (2 if embed else 3)
    assert os.path.exists(os.path.join(src, "norm_weight.npy")) == norm
    for name in ("residual", "fn", "scale", "base") + (("norm_weight",) if norm else ()):
        a = load(src, name)
        assert a.dtype == np.dtype("<f4") and np.isfinite(a).all()
    assert command("--in", src, "--out", tmp_path / "want").returncode == 0
    r = command("--compare", tmp_path / "want", "--in", src)
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ("y:", "post:", "comb:", "OK"):
        assert name in r.stdout
    assert f"norm={'fused' if norm else 'none'}" in r.stdout
    # Against saved reference outputs.
    r = command("--compare", tmp_path / "want", tmp_path / "want", "--in", src)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("embed,norm", FORMS)
@pytest.mark.parametrize("output", ["y", "post", "comb"])
def test_an_output_beyond_its_tolerance_fails(tmp_path, embed, norm, output):
    src = generate(tmp_path / "in", embed, norm)
    got = tmp_path / "got"
    assert tool("--in", src, "--out", got).returncode == 0
    v = load(got, output)
    if output == "y":
        i = np.unravel_index(np.argmax(np.abs(v)), v.shape)  # no cancellation there
        v[i] = bump_ulps(v[i], 3)
    else:
        v.flat[0] *= 1 + 1e-3
    save(got, output, v)
    r = (command if output == "y" else tool)("--compare", got, "--in", src)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAILED" in r.stdout


@pytest.mark.parametrize("embed,norm", FORMS)
def test_one_ulp_on_y_is_within_tolerance(tmp_path, embed, norm):
    src = generate(tmp_path / "in", embed, norm)
    got = tmp_path / "got"
    assert tool("--in", src, "--out", got).returncode == 0
    y = load(got, "y")
    y[y != 0] = bump_ulps(y[y != 0], 1)
    save(got, "y", y)
    r = tool("--compare", got, "--in", src)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("norm,two_ulp_values,rc", [(True, 1, 0), (True, 2, 1), (False, 1, 1)])
def test_two_ulps_on_y_only_with_the_norm_and_rarely(tmp_path, norm, two_ulp_values, rc):
    # 5 x 64 values: with the norm, at most ceil(1e-4 * 320) = 1 of them at 2 ulps.
    src = generate(tmp_path / "in", False, norm)
    got = tmp_path / "got"
    assert tool("--in", src, "--out", got).returncode == 0
    y = load(got, "y")
    for i in np.argsort(-np.abs(y), axis=None)[:two_ulp_values]:
        y.flat[i] = bump_ulps(y.flat[i], 2)
    save(got, "y", y)
    r = tool("--compare", got, "--in", src)
    assert r.returncode == rc, r.stdout + r.stderr


def cancelling_inputs(d):
    # Token 0, element 0: equal pre gates on streams (1, -1, 1, -1): y is exactly 0, its terms sum to 4.
    generate(d, embed=False, norm=False)
    fn, base, res = load(d, "fn"), load(d, "base"), load(d, "residual")
    hc = 4
    fn[:hc] = 0
    base[:hc] = 0
    res[0, :, 0] = [1, -1, 1, -1]
    for name, v in (("fn", fn), ("base", base), ("residual", res)):
        save(d, name, v)


@pytest.mark.parametrize("err,rc", [(1e-7, 0), (1e-5, 1)])
def test_no_norm_cancellation_allowance(tmp_path, err, rc):
    # Within 2^-21 * sum_i |x_i| (1.9e-6 here) of an exact zero: valid, though many bf16 ulps away.
    src = tmp_path / "in"
    cancelling_inputs(src)
    got = tmp_path / "got"
    assert tool("--in", src, "--out", got).returncode == 0
    y = load(got, "y")
    assert y[0, 0] == 0
    y[0, 0] = ref.bf16_round(np.float32(err))
    save(got, "y", y)
    r = tool("--compare", got, "--in", src)
    assert r.returncode == rc, r.stdout + r.stderr
    if rc == 0:
        assert "1 within the cancellation allowance" in r.stdout


def test_embedding_reference_is_the_reference_on_its_copies():
    rng = np.random.default_rng(3)
    residual, fn, scale, base, w = (rng.standard_normal((3, 4, 32)).astype(np.float32),
                                    (1e-3 * rng.standard_normal((24, 128))).astype(np.float32),
                                    (0.1 * rng.standard_normal(3)).astype(np.float32),
                                    (0.1 * rng.standard_normal(24)).astype(np.float32),
                                    (1 + 0.1 * rng.standard_normal(32)).astype(np.float32))
    embed = residual[:, 0, :]
    copies = np.repeat(embed[:, None, :], 4, axis=1)
    for norm in (None, w):
        got = ref.hc_pre(embed, fn, scale, base, norm, 1e-6, 1e-6, 1e-6, 20)
        want = ref.hc_pre(copies, fn, scale, base, norm, 1e-6, 1e-6, 1e-6, 20)
        for a, b in zip(got, want):
            assert np.array_equal(a, b)


@pytest.mark.parametrize("missing", ["residual", "fn", "scale", "base"])
def test_a_missing_input_exits_2_naming_it(tmp_path, missing):
    src = generate(tmp_path / "in", False, False)
    assert tool("--in", src, "--out", tmp_path / "got").returncode == 0
    os.remove(os.path.join(src, f"{missing}.npy"))
    for args in (("--compare", tmp_path / "got", "--in", src), ("--in", src, "--out", tmp_path / "o2")):
        r = (command if missing == "fn" else tool)(*args)
        assert r.returncode == 2, r.stdout + r.stderr
        assert f"{missing}.npy: missing" in r.stderr


@pytest.mark.parametrize("output", ["y", "post", "comb"])
def test_a_missing_or_misshapen_output_exits_2_naming_it(tmp_path, output):
    src = generate(tmp_path / "in", True, True)
    got = tmp_path / "got"
    assert tool("--in", src, "--out", got).returncode == 0
    save(got, output, load(got, output)[:, :-1])
    r = tool("--compare", got, "--in", src)
    assert r.returncode == 2 and f"{output}.npy: shape" in r.stderr, r.stdout + r.stderr
    os.remove(os.path.join(got, f"{output}.npy"))
    r = tool("--compare", got, "--in", src)
    assert r.returncode == 2 and f"{output}.npy: missing" in r.stderr, r.stdout + r.stderr


@pytest.mark.parametrize("name,shape", [("norm_weight", (63,)), ("scale", (2,)), ("residual", (5, 4, 4, 64)),
                                        ("fn", (24, 255))])
def test_a_misshapen_input_exits_2_naming_it(tmp_path, name, shape):
    src = generate(tmp_path / "in", False, True)
    save(src, name, np.zeros(shape))
    r = tool("--in", src, "--out", tmp_path / "o")
    assert r.returncode == 2 and f"{name}.npy" in r.stderr, r.stdout + r.stderr


def test_a_float64_input_exits_2(tmp_path):
    src = generate(tmp_path / "in", False, False)
    np.save(os.path.join(src, "scale.npy"), load(src, "scale").astype(np.float64))
    r = tool("--in", src, "--out", tmp_path / "o")
    assert r.returncode == 2 and "scale.npy: dtype float64" in r.stderr, r.stdout + r.stderr


def test_generate_without_norm_removes_a_stale_norm_weight(tmp_path):
    src = generate(tmp_path / "in", False, True)
    generate(src, False, False)
    assert not os.path.exists(os.path.join(src, "norm_weight.npy"))


def test_compare_needs_the_inputs():
    r = command("--compare", "got")
    assert r.returncode == 2 and "--in" in r.stderr


needs_cli = pytest.mark.skipif(not os.access(CLI, os.X_OK), reason=f"no hcwarm binary at {CLI}")


@pytest.fixture(scope="module")
def cli_cache(tmp_path_factory):
    # One private kernel cache for the module: each CPU kernel compiles once, the user's cache is untouched.
    return str(tmp_path_factory.mktemp("hcwarm-cache"))


@needs_cli
@pytest.mark.parametrize("backend", ["reference", "cpu"])
@pytest.mark.parametrize("embed,norm", FORMS)
def test_hcwarm_op_hc_pre_round_trip(tmp_path, cli_cache, backend, embed, norm):
    src = generate(tmp_path / "in", embed, norm, tokens=5, hidden=4096)  # dsv4-flash
    out = tmp_path / "out"
    r = subprocess.run([CLI, "op", "hc-pre", "--model", "dsv4-flash", "--backend", backend, "--in", str(src),
                        "--out", str(out)], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, HCWARM_CACHE_DIR=cli_cache))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"input={'embed' if embed else 'residual'}" in r.stdout
    r = command("--compare", out, "--in", src)
    assert r.returncode == 0, r.stdout + r.stderr
