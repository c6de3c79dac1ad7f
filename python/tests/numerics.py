"""Comparison of hc_pre outputs with the float64 reference, with hcwarm's documented tolerances.

y is compared in bf16 ulps: within 1 ulp, except where the stream sum cancels
(|y| far below the sum of its terms: then within CANCELLATION_REL times the
terms' magnitude) and, with the fused norm, at most NORM_TWO_ULP_SHARE of the
values at 2 ulps (the reference rounds y to bf16 before the norm, so a y one
ulp away on the other side of a rounding boundary scales to 2 ulps). post and
comb: relative error at most POST_REL_TOL / COMB_REL_TOL.
"""
import math
import os
import sys

import numpy as np

# tools/mhc_reference.py: the independent float64 NumPy implementation of the math.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import mhc_reference as ref  # noqa: E402

CANCELLATION_REL = 1.0 / (1 << 21)
NORM_TWO_ULP_SHARE = 1e-4
POST_REL_TOL = 2e-5
COMB_REL_TOL = 5e-5


def compare(y, post, comb, residual, fn, scale, base, norm_weight, iters=20, eps=1e-6):
    """Returns a dict of the measured errors; asserts the tolerances."""
    want_y, want_post, want_comb = ref.hc_pre(residual, fn, scale, base, norm_weight, eps, eps, eps, iters)
    y = np.asarray(y, np.float32)
    assert np.isfinite(y).all() and np.isfinite(post).all() and np.isfinite(comb).all(), "non-finite outputs"
    ulps = ref.ulp_distance(y, want_y)
    x = ref.bf16_round(residual).astype(np.float64)
    terms = np.abs(x).sum(axis=1)  # (T, D)
    if norm_weight is not None:
        plain, _, _ = ref.hc_pre(residual, fn, scale, base, None, eps, eps, eps, iters)
        rn = 1.0 / np.sqrt((plain.astype(np.float64) ** 2).mean(axis=1) + eps)
        terms = terms * rn[:, None] * np.abs(ref.bf16_round(norm_weight).astype(np.float64))
    cancel = np.abs(y.astype(np.float64) - want_y) <= CANCELLATION_REL * terms + 1e-30
    over = (ulps > 1) & ~cancel
    worst = int(ulps[~cancel | (ulps <= 1)].max()) if ulps.size else 0
    post_rel = float(np.max(np.abs(post - want_post) / np.maximum(np.abs(want_post), 1e-30))) if post.size else 0.0
    comb_rel = float(np.max(np.abs(comb - want_comb) / np.maximum(np.abs(want_comb), 1e-30))) if comb.size else 0.0
    if norm_weight is None:
        assert worst <= 1, f"y: {worst} bf16 ulps from the reference"
    else:
        assert worst <= 2, f"y: {worst} bf16 ulps from the reference"
        assert over.sum() <= math.ceil(NORM_TWO_ULP_SHARE * y.size), f"y: {int(over.sum())} values at 2 ulps"
    assert post_rel <= POST_REL_TOL, f"post: relative error {post_rel:.3e}"
    assert comb_rel <= COMB_REL_TOL, f"comb: relative error {comb_rel:.3e}"
    return {"y_max_ulp": worst, "y_exact": float((ulps == 0).mean()) if ulps.size else 1.0,
            "post_max_rel": post_rel, "comb_max_rel": comb_rel}


def compare_post(got, x, residual, post, comb):
    """hc_post's output within 1 bf16 ulp of the float64 reference, except where the
    sum cancels: there within CANCELLATION_REL times the magnitude of its terms."""
    want = post_reference(x, residual, post, comb)
    got = np.asarray(got, np.float32)
    assert np.isfinite(got).all(), "non-finite outputs"
    ulps = ref.ulp_distance(got, want)
    xr = np.abs(ref.bf16_round(x).astype(np.float64))
    rr = np.abs(ref.bf16_round(residual).astype(np.float64))
    terms = np.abs(post.astype(np.float64))[:, :, None] * xr[:, None, :] + \
        np.einsum("tij,tid->tjd", np.abs(comb.astype(np.float64)), rr)
    cancel = np.abs(got.astype(np.float64) - want) <= CANCELLATION_REL * terms + 1e-30
    worst = int(ulps[~cancel | (ulps <= 1)].max()) if ulps.size else 0
    assert worst <= 1, f"hc_post: {worst} bf16 ulps from the reference"
    return {"max_ulp": worst, "cancellation": int(((ulps > 1) & cancel).sum())}


def post_reference(x, residual, post, comb):
    """new_residual[t, j] = post[t, j] x[t] + sum_i comb[t, i, j] residual[t, i], float64, then bf16."""
    xr = ref.bf16_round(x).astype(np.float64)
    rr = ref.bf16_round(residual).astype(np.float64)
    out = post.astype(np.float64)[:, :, None] * xr[:, None, :] + np.einsum("tij,tid->tjd", comb.astype(np.float64), rr)
    return out


def random_inputs(rng, t, hc, d, norm=True):
    """The C++ tests' distribution (tests/common/test_util.cpp), the regime the tolerances are stated for."""
    mix = hc * (2 + hc)
    residual = rng.standard_normal((t, hc, d)).astype(np.float32)
    fn = (rng.standard_normal((mix, hc * d)) * 1e-3).astype(np.float32)
    scale = (rng.standard_normal(3) * 0.1).astype(np.float32)
    base = (rng.standard_normal(mix) * 0.1).astype(np.float32)
    w = (1.0 + 0.1 * rng.standard_normal(d)).astype(np.float32) if norm else None
    return residual, fn, scale, base, w


def head_reference(residual, head_fn, head_scale, head_base, hc_eps=1e-6, rms_eps=1e-6):
    """The mHC head in float64 (docs/MATH.md, section 6): y (T, D) before its bf16 rounding."""
    t, hc, d = residual.shape
    x = ref.bf16_round(residual).astype(np.float64)
    flat = x.reshape(t, hc * d)
    r = 1.0 / np.sqrt((flat * flat).mean(axis=1) + rms_eps)
    mixes = (flat @ head_fn.astype(np.float64).T) * r[:, None]
    pre = ref.sigmoid(mixes * float(head_scale[0]) + head_base.astype(np.float64)) + hc_eps
    return np.einsum("ti,tid->td", pre, x), pre


def compare_head(got, residual, head_fn, head_scale, head_base):
    """hc_head's y within 1 bf16 ulp of the float64 reference, except where the stream sum
    cancels: there within CANCELLATION_REL times the magnitude of its terms (as the C++ tests)."""
    want, pre = head_reference(residual, head_fn, head_scale, head_base)
    got = np.asarray(got, np.float32)
    assert np.isfinite(got).all(), "non-finite outputs"
    ulps = ref.ulp_distance(got, want)
    terms = np.einsum("ti,tid->td", np.abs(pre), np.abs(ref.bf16_round(residual).astype(np.float64)))
    cancel = np.abs(got.astype(np.float64) - want) <= CANCELLATION_REL * terms + 1e-30
    worst = int(ulps[~cancel | (ulps <= 1)].max()) if ulps.size else 0
    assert worst <= 1, f"hc_head: {worst} bf16 ulps from the reference"
    return {"max_ulp": worst}


def random_post_state(rng, t, hc, d):
    """A sublayer's output x and the previous pre's gates, in the ranges hc_pre gives them."""
    x = rng.standard_normal((t, d)).astype(np.float32)
    prev_post = rng.uniform(0, 2, (t, hc)).astype(np.float32)
    prev_comb = rng.uniform(0, 1, (t, hc, hc)).astype(np.float32)
    return x, prev_post, prev_comb
