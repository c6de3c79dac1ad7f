#!/usr/bin/env python3
"""Independent float64 NumPy implementation of the mHC pre step (docs/MATH.md, section 2).

Written from the formulas, sharing no code with hcwarm, so it can check
`hcwarm op hc-pre` from the outside. It reads the files that command reads:
DIR/residual.npy (T, hc, D) streams, or (T, D): the first layer's embedding
standing for hc identical streams (hc from fn's hc*D columns); fn.npy
(hc*(2+hc), hc*D), scale.npy (3,), base.npy (hc*(2+hc),) and, when present,
norm_weight.npy (D,); all float32, residual and norm_weight rounded to bf16.

    # 1. random inputs in that format (dsv4-flash: --hidden 4096, dsv4-pro: --hidden 7168)
    mhc_reference.py --generate DIR [--tokens 8] [--hc 4] [--hidden 4096] [--embed] [--norm] [--seed 0]
    # 2. hcwarm op hc-pre --in DIR --out OUT [--model dsv4-flash] [--backend cpu|cuda|reference]
    # 3. OUT against this reference, with the documented tolerances
    mhc_reference.py --compare OUT --in DIR
    mhc_reference.py --compare OUT WANT --in DIR   # against saved reference outputs WANT instead
    # the reference outputs themselves: DIR2/{y,post,comb}.npy
    mhc_reference.py --in DIR --out DIR2

Tolerances (docs/MATH.md, section 5): y within 1 bf16 ulp, except where the
stream sum cancels (then within 2^-21 * sum_i |x_i[d]|, times rn * |w| with the
norm); with norm_weight at most 1e-4 of y at 2 ulps; post relative error at
most 2e-5, comb at most 5e-5. --compare prints each output's worst error and
its tolerance. Exit status: 0 within tolerance, 1 outside it (or non-finite
outputs), 2 bad input (a missing or unreadable file, a wrong dtype or shape:
the message names the file).
"""
import argparse
import math
import os
import sys

import numpy as np

# docs/MATH.md, section 5.
CANCELLATION_REL = 1.0 / (1 << 21)
NORM_TWO_ULP_SHARE = 1e-4
POST_REL_TOL = 2e-5
COMB_REL_TOL = 5e-5

INPUTS = ("residual", "fn", "scale", "base")
OUTPUTS = ("y", "post", "comb")


class InputError(Exception):
    """A missing, unreadable or misshapen file (exit 2)."""


def bf16_round(x):
    """float -> nearest-even bfloat16, returned as float32 values."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32)


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def sinkhorn(c, iters, eps):
    c = np.exp(c - c.max(axis=-1, keepdims=True))
    c = c / c.sum(axis=-1, keepdims=True) + eps
    c = c / (c.sum(axis=-2, keepdims=True) + eps)
    for _ in range(iters - 1):
        c = c / (c.sum(axis=-1, keepdims=True) + eps)
        c = c / (c.sum(axis=-2, keepdims=True) + eps)
    return c


def streams(residual, fn):
    """The (T, hc, D) streams: residual itself, or hc copies of a (T, D) embedding (hc = fn columns / D)."""
    residual = np.asarray(residual)
    if residual.ndim == 3:
        return residual
    d = residual.shape[1]
    hc = np.shape(fn)[1] // d
    return np.repeat(residual[:, None, :], hc, axis=1)


def hc_pre(residual, fn, scale, base, norm_weight, hc_eps, rms_eps, norm_eps, iters, post_mult=2.0):
    """(y, post, comb); residual is (T, hc, D), or the first layer's embedding (T, D)."""
    residual = streams(residual, fn)
    t, hc, d = residual.shape
    x = bf16_round(residual).astype(np.float64)            # the user's tensor, as bf16
    flat = x.reshape(t, hc * d)
    r = 1.0 / np.sqrt((flat * flat).mean(axis=1) + rms_eps)
    mixes = (flat @ fn.astype(np.float64).T) * r[:, None]  # (t, hc*(2+hc))
    s = scale.astype(np.float64)
    b = base.astype(np.float64)
    pre = sigmoid(mixes[:, :hc] * s[0] + b[:hc]) + hc_eps
    post = post_mult * sigmoid(mixes[:, hc:2 * hc] * s[1] + b[hc:2 * hc])
    logits = (mixes[:, 2 * hc:] * s[2] + b[2 * hc:]).reshape(t, hc, hc)
    comb = sinkhorn(logits, iters, hc_eps)
    y = np.einsum("ti,tid->td", pre, x)
    if norm_weight is None:
        y = bf16_round(y.astype(np.float32))
    else:
        w = bf16_round(norm_weight).astype(np.float64)
        yb = bf16_round(y.astype(np.float32)).astype(np.float64)
        rn = 1.0 / np.sqrt((yb * yb).mean(axis=1) + norm_eps)
        y = bf16_round((yb * rn[:, None] * w).astype(np.float32))
    return y, post, comb


def ulp_distance(a, b):
    def ordered(v):
        bits = (bf16_round(v).view(np.uint32) >> 16).astype(np.int64)
        return np.where(bits & 0x8000, -(bits & 0x7FFF), bits)
    return np.abs(ordered(a) - ordered(b))


# --- files ---------------------------------------------------------------------------------------

def load_npy(dir_, name, required=True, float32=True):
    """DIR/name.npy as an array, or None when absent and not required; InputError names the file."""
    path = os.path.join(dir_, f"{name}.npy")
    if not os.path.lexists(path):
        if required:
            raise InputError(f"{path}: missing")
        return None
    try:
        a = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"{path}: not a readable .npy file ({e})") from None
    if float32 and a.dtype != np.float32:
        raise InputError(f"{path}: dtype {a.dtype} is not float32 (hcwarm reads '<f4' .npy files)")
    if not float32 and a.dtype.kind != "f":
        raise InputError(f"{path}: dtype {a.dtype} is not a floating-point type")
    return a


def expect_shape(dir_, name, a, want, what):
    if tuple(a.shape) != tuple(want):
        raise InputError(f"{os.path.join(dir_, name + '.npy')}: shape {tuple(a.shape)} does not match "
                         f"{tuple(want)} expected from {what}")


def load_inputs(in_dir):
    """The inputs `hcwarm op hc-pre` reads, checked as it checks them: dict and (T, hc, D)."""
    if not os.path.isdir(in_dir):
        raise InputError(f"--in {in_dir}: not a directory")
    x = {n: load_npy(in_dir, n) for n in INPUTS}
    x["norm_weight"] = load_npy(in_dir, "norm_weight", required=False)
    r, fn = x["residual"], x["fn"]
    where = os.path.join(in_dir, "residual.npy")
    if r.ndim == 3:
        t, hc, d = r.shape
        if hc < 1 or d < 1:
            raise InputError(f"{where}: hc and D must be positive, got shape {r.shape}")
    elif r.ndim == 2:
        t, d = r.shape
        if d < 1:
            raise InputError(f"{where}: D must be positive, got shape {r.shape}")
        hc = fn.shape[1] // d if fn.ndim == 2 else 0
        if fn.ndim != 2 or hc < 1 or fn.shape != (hc * (2 + hc), hc * d):
            raise InputError(f"{os.path.join(in_dir, 'fn.npy')}: shape {fn.shape} does not match "
                             f"(hc*(2+hc), hc*{d}) for any hc, expected from the embedding residual.npy {r.shape}")
    else:
        raise InputError(f"{where}: residual must have shape (T, hc, D), or (T, D) for the first layer's "
                         f"embedding, got {r.shape}")
    mix = hc * (2 + hc)
    what = f"residual.npy {r.shape}"
    expect_shape(in_dir, "fn", fn, (mix, hc * d), what)
    expect_shape(in_dir, "scale", x["scale"], (3,), what)
    expect_shape(in_dir, "base", x["base"], (mix,), what)
    if x["norm_weight"] is not None:
        expect_shape(in_dir, "norm_weight", x["norm_weight"], (d,), what)
    return x, (t, hc, d)


def load_outputs(dir_, dims):
    t, hc, d = dims
    out = {n: load_npy(dir_, n, float32=False) for n in OUTPUTS}
    for name, want in (("y", (t, d)), ("post", (t, hc)), ("comb", (t, hc, hc))):
        expect_shape(dir_, name, out[name], want, f"the inputs (T={t}, hc={hc}, D={d})")
    return out


def save_outputs(out_dir, y, post, comb):
    os.makedirs(out_dir, exist_ok=True)
    for name, v in (("y", y), ("post", post), ("comb", comb)):
        np.save(os.path.join(out_dir, f"{name}.npy"), np.asarray(v, dtype=np.float32))


def generate(out_dir, tokens, hc, hidden, embed=False, norm=False, seed=0):
    """Random inputs in the CLI's format, in the regime the tolerances are stated for (the tests')."""
    rng = np.random.default_rng(seed)
    mix = hc * (2 + hc)
    shape = (tokens, hidden) if embed else (tokens, hc, hidden)
    files = {
        "residual": bf16_round(rng.standard_normal(shape).astype(np.float32)),
        "fn": (1e-3 * rng.standard_normal((mix, hc * hidden))).astype(np.float32),
        "scale": (0.1 * rng.standard_normal(3)).astype(np.float32),
        "base": (0.1 * rng.standard_normal(mix)).astype(np.float32),
    }
    if norm:
        files["norm_weight"] = bf16_round((1.0 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
    os.makedirs(out_dir, exist_ok=True)
    stale = os.path.join(out_dir, "norm_weight.npy")
    if not norm and os.path.lexists(stale):
        os.remove(stale)  # its presence alone turns the norm on
    for name, v in files.items():
        np.save(os.path.join(out_dir, f"{name}.npy"), v)
    return sorted(files)


# --- comparison ----------------------------------------------------------------------------------

def check(got, want, x, consts=(1e-6, 1e-6, 1e-6, 20), rtol=None):
    """got and want: dicts of y, post, comb; x: the inputs (residual, fn, ..., or None: no cancellation
    allowance and no norm). consts: hc_eps, rms_eps, norm_eps, iters. Returns (ok, report lines)."""
    hc_eps, rms_eps, norm_eps, iters = consts
    norm = x["norm_weight"] if x is not None else None
    bad = [n for n in OUTPUTS if not np.isfinite(np.asarray(got[n], np.float64)).all()]
    if bad:
        return False, [f"non-finite values in {', '.join(bad)}"]
    y = np.asarray(got["y"], np.float32)
    want_y = np.asarray(want["y"], np.float32)
    ulps = ulp_distance(y, want_y)
    # The cancellation allowance: 2^-21 times the magnitude of the stream sum's terms.
    terms = np.zeros(y.shape)
    if x is not None:
        terms = np.abs(bf16_round(streams(x["residual"], x["fn"])).astype(np.float64)).sum(axis=1)
    if norm is not None:
        plain, _, _ = hc_pre(x["residual"], x["fn"], x["scale"], x["base"], None, hc_eps, rms_eps, norm_eps, iters)
        rn = 1.0 / np.sqrt((plain.astype(np.float64) ** 2).mean(axis=1) + norm_eps)
        terms = terms * rn[:, None] * np.abs(bf16_round(norm).astype(np.float64))
    cancel = np.abs(y.astype(np.float64) - want_y) <= CANCELLATION_REL * terms + 1e-30
    counted = ~cancel | (ulps <= 1)
    worst = int(ulps[counted].max()) if counted.any() else 0
    line = f"y: max {worst} bf16 ulp (tolerance {1 if norm is None else 2})"
    ok = True
    if norm is None:
        ok &= worst <= 1
    else:
        over = int(((ulps > 1) & ~cancel).sum())
        cap = math.ceil(NORM_TWO_ULP_SHARE * y.size)
        line += f", {over} at 2 ulps (at most {cap})"
        ok &= worst <= 2 and over <= cap
    line += f", {int((ulps == 0).sum())} of {y.size} bit-exact"
    if x is not None:
        line += f", {int(((ulps > 1) & cancel).sum())} within the cancellation allowance"
    lines = [line]
    for name, tol in (("post", POST_REL_TOL), ("comb", COMB_REL_TOL)):
        tol = tol if rtol is None else rtol
        g = np.asarray(got[name], np.float64)
        w = np.asarray(want[name], np.float64)
        rel = np.abs(g - w) / np.maximum(np.abs(w), 1e-30)
        err = float(rel.max()) if rel.size else 0.0
        lines.append(f"{name}: max relative error {err:.3e} (tolerance {tol:g})")
        ok &= err <= tol
    return bool(ok), lines


def compare(got_dir, want_dir=None, rtol=None, in_dir=None, consts=(1e-6, 1e-6, 1e-6, 20)):
    """GOT's outputs against WANT's (None: the reference of in_dir's inputs); prints each output's
    error against its tolerance and returns whether all are within. Without in_dir, y is held to
    1 ulp everywhere: the cancellation allowance and the norm's 2 ulps need the inputs.
    Raises InputError for a missing or misshapen file."""
    if in_dir is None:
        if want_dir is None:
            raise InputError("compare: give WANT or the inputs' directory")
        y = load_npy(got_dir, "y", float32=False)
        post = load_npy(got_dir, "post", float32=False)
        if y.ndim != 2 or post.ndim != 2:
            raise InputError(f"{os.path.join(got_dir, 'y.npy')}: expected y (T, D) and post (T, hc), "
                             f"got {y.shape} and {post.shape}")
        x, dims = None, (y.shape[0], post.shape[1], y.shape[1])
    else:
        x, dims = load_inputs(in_dir)
    got = load_outputs(got_dir, dims)
    if want_dir is not None:
        want = load_outputs(want_dir, dims)
    else:
        y, post, comb = hc_pre(x["residual"], x["fn"], x["scale"], x["base"], x["norm_weight"], *consts)
        want = {"y": y, "post": post, "comb": comb}
    if x is not None:
        t, hc, d = dims
        form = "embedding" if x["residual"].ndim == 2 else "residual"
        print(f"T={t} hc={hc} D={d} input={form} norm={'fused' if x['norm_weight'] is not None else 'none'}")
    ok, lines = check(got, want, x, consts, rtol)
    for line in lines:
        print(line)
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--in", dest="in_dir", metavar="DIR", help="inputs, as `hcwarm op hc-pre --in DIR` reads them")
    ap.add_argument("--out", dest="out_dir", metavar="DIR", help="write the reference y, post, comb .npy here")
    ap.add_argument("--compare", nargs="+", metavar="DIR",
                    help="GOT [WANT]: check GOT's outputs against WANT's, or against the reference of --in")
    ap.add_argument("--generate", metavar="DIR", help="write random valid inputs into DIR")
    g = ap.add_argument_group("--generate")
    g.add_argument("--tokens", type=int, default=8, help="T (default 8)")
    g.add_argument("--hc", type=int, default=4, help="streams (default 4)")
    g.add_argument("--hidden", type=int, default=4096, help="D (default 4096, dsv4-flash; 7168 for dsv4-pro)")
    g.add_argument("--embed", action="store_true", help="residual as the first layer's (T, D) embedding")
    g.add_argument("--norm", action="store_true", help="write norm_weight.npy (the fused RMSNorm)")
    g.add_argument("--seed", type=int, default=0)
    c = ap.add_argument_group("constants (hcwarm's: docs/MATH.md, section 1)")
    c.add_argument("--hc-eps", type=float, default=1e-6)
    c.add_argument("--rms-eps", type=float, default=1e-6)
    c.add_argument("--norm-eps", type=float, default=None, help="default: --rms-eps")
    c.add_argument("--iters", type=int, default=20)
    a = ap.parse_args(argv)
    norm_eps = a.rms_eps if a.norm_eps is None else a.norm_eps
    consts = (a.hc_eps, a.rms_eps, norm_eps, a.iters)

    modes = [m for m, on in (("--generate", a.generate), ("--compare", a.compare), ("--out", a.out_dir)) if on]
    if len(modes) != 1:
        ap.error("give one of --generate DIR, --compare GOT [WANT] --in DIR, --in DIR --out DIR")
    try:
        if a.generate:
            if a.tokens < 0 or a.hc < 1 or a.hidden < 1:
                ap.error("--tokens must be >= 0, --hc and --hidden >= 1")
            names = generate(a.generate, a.tokens, a.hc, a.hidden, a.embed, a.norm, a.seed)
            shape = f"({a.tokens}, {a.hidden})" if a.embed else f"({a.tokens}, {a.hc}, {a.hidden})"
            print(f"wrote {', '.join(n + '.npy' for n in names)} to {a.generate} (residual {shape})")
            return 0
        if not a.in_dir:
            ap.error(f"{modes[0]} needs --in DIR (the inputs: the tolerances depend on them)")
        if a.compare:
            if len(a.compare) > 2:
                ap.error("--compare takes GOT [WANT]")
            want_dir = a.compare[1] if len(a.compare) > 1 else None
            ok = compare(a.compare[0], want_dir, in_dir=a.in_dir, consts=consts)
            print("OK" if ok else "FAILED: outside the tolerances of docs/MATH.md, section 5")
            return 0 if ok else 1
        x, _ = load_inputs(a.in_dir)
        y, post, comb = hc_pre(x["residual"], x["fn"], x["scale"], x["base"], x["norm_weight"], *consts)
        save_outputs(a.out_dir, y, post, comb)
        return 0
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
