"""Argument checks shared by the NumPy and PyTorch paths.

Every check names the argument and says what was expected, and runs before
anything is written. Shapes follow the mHC math: residual (T, hc, D), fn
(hc*(2+hc), hc*D), scale (3,), base (hc*(2+hc),), norm_weight (D,).
"""
from __future__ import annotations

from typing import Any, Sequence, Tuple


def shape_of(name: str, x: Any) -> Tuple[int, ...]:
    shape = getattr(x, "shape", None)
    if shape is None:
        raise TypeError(f"{name}: expected an array or tensor, got {type(x).__name__}")
    return tuple(int(d) for d in shape)


def expect_shape(name: str, x: Any, want: Sequence[int]) -> None:
    got = shape_of(name, x)
    if got != tuple(want):
        raise ValueError(f"{name}: expected shape {tuple(want)}, got {got}")


def pre_dims(residual: Any) -> Tuple[int, int, int]:
    shape = shape_of("residual", residual)
    if len(shape) != 3:
        raise ValueError(f"residual: expected (T, hc, D), got shape {shape}")
    t, hc, d = shape
    if hc < 1 or d < 1:
        raise ValueError(f"residual: hc and D must be positive, got shape {shape}")
    return t, hc, d


def pre_shapes(residual: Any, fn: Any, scale: Any, base: Any, norm_weight: Any) -> Tuple[int, int, int]:
    t, hc, d = pre_dims(residual)
    mix = hc * (2 + hc)
    expect_shape("fn", fn, (mix, hc * d))
    expect_shape("scale", scale, (3,))
    expect_shape("base", base, (mix,))
    if norm_weight is not None:
        expect_shape("norm_weight", norm_weight, (d,))
    return t, hc, d


def pre_out_shapes(out: Any, t: int, hc: int, d: int) -> Tuple[Any, Any, Any]:
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise TypeError("out: expected a tuple (y, post, comb)")
    y, post, comb = out
    expect_shape("out[0] (y)", y, (t, d))
    expect_shape("out[1] (post)", post, (t, hc))
    expect_shape("out[2] (comb)", comb, (t, hc, hc))
    return y, post, comb


def post_shapes(x: Any, residual: Any, post: Any, comb: Any) -> Tuple[int, int, int]:
    t, hc, d = pre_dims(residual)
    expect_shape("x", x, (t, d))
    expect_shape("post", post, (t, hc))
    expect_shape("comb", comb, (t, hc, hc))
    return t, hc, d


def constants(sinkhorn_iters: Any, hc_eps: Any, rms_eps: Any, norm_eps: Any, post_mult: Any) -> tuple:
    if isinstance(sinkhorn_iters, bool) or not isinstance(sinkhorn_iters, int):
        raise TypeError(f"sinkhorn_iters: expected an int, got {type(sinkhorn_iters).__name__}")
    if not 1 <= sinkhorn_iters <= 1000:
        raise ValueError(f"sinkhorn_iters: expected 1..1000, got {sinkhorn_iters}")
    out = [sinkhorn_iters]
    for name, v in (("hc_eps", hc_eps), ("rms_eps", rms_eps), ("norm_eps", norm_eps), ("post_mult", post_mult)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"{name}: expected a float, got {type(v).__name__}")
        if not (v == v and abs(v) != float("inf")):
            raise ValueError(f"{name}: expected a finite float, got {v}")
        out.append(float(v))
    return tuple(out)
