#!/usr/bin/env python3
"""Independent float64 NumPy implementation of the mHC pre step (docs/MATH.md, section 2).

Written from the formulas, sharing no code with hcwarm, so it can check
`hcwarm op hc-pre` from the outside:

    python3 tools/mhc_reference.py --in DIR --out DIR [--hc-eps 1e-6] [--rms-eps 1e-6] [--iters 20]
    python3 tools/mhc_reference.py --compare GOT_DIR WANT_DIR      # y within 1 bf16 ulp, post/comb 1e-5 rel
"""
import argparse
import os
import sys

import numpy as np


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


def hc_pre(residual, fn, scale, base, norm_weight, hc_eps, rms_eps, norm_eps, iters, post_mult=2.0):
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


def compare(got_dir, want_dir, rtol=1e-5):
    ok = True
    y_got = np.load(os.path.join(got_dir, "y.npy"))
    y_want = np.load(os.path.join(want_dir, "y.npy"))
    if y_got.shape != y_want.shape:
        print(f"y shape {y_got.shape} != {y_want.shape}")
        return False
    ulps = ulp_distance(y_got, y_want)
    exact = float((ulps == 0).mean()) if ulps.size else 1.0
    print(f"y: max {int(ulps.max()) if ulps.size else 0} bf16 ulp, {100 * exact:.2f}% bit-exact")
    ok &= ulps.size == 0 or int(ulps.max()) <= 1
    for name in ("post", "comb"):
        g = np.load(os.path.join(got_dir, f"{name}.npy")).astype(np.float64)
        w = np.load(os.path.join(want_dir, f"{name}.npy")).astype(np.float64)
        if g.shape != w.shape:
            print(f"{name} shape {g.shape} != {w.shape}")
            return False
        rel = np.abs(g - w) / np.maximum(np.abs(w), 1e-30)
        worst = float(rel.max()) if rel.size else 0.0
        print(f"{name}: max relative error {worst:.3e} (tolerance {rtol:g})")
        ok &= worst <= rtol
    return bool(ok)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--in", dest="in_dir")
    ap.add_argument("--out", dest="out_dir")
    ap.add_argument("--hc-eps", type=float, default=1e-6)
    ap.add_argument("--rms-eps", type=float, default=1e-6)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--compare", nargs=2, metavar=("GOT", "WANT"))
    a = ap.parse_args()
    if a.compare:
        sys.exit(0 if compare(*a.compare) else 1)
    load = lambda n: np.load(os.path.join(a.in_dir, n))
    norm_path = os.path.join(a.in_dir, "norm_weight.npy")
    norm = np.load(norm_path) if os.path.exists(norm_path) else None
    y, post, comb = hc_pre(load("residual.npy"), load("fn.npy"), load("scale.npy"), load("base.npy"), norm,
                           a.hc_eps, a.rms_eps, a.rms_eps, a.iters)
    os.makedirs(a.out_dir, exist_ok=True)
    np.save(os.path.join(a.out_dir, "y.npy"), y.astype(np.float32))
    np.save(os.path.join(a.out_dir, "post.npy"), post.astype(np.float32))
    np.save(os.path.join(a.out_dir, "comb.npy"), comb.astype(np.float32))


if __name__ == "__main__":
    main()
