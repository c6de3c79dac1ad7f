"""Argument checks shared by the NumPy and PyTorch paths.

Every check names the argument and says what was expected, and runs before
anything is written. Shapes follow the mHC math: residual (T, hc, D) (or the
first layer's embedding (T, D)), fn (hc*(2+hc), hc*D), scale (3,), base
(hc*(2+hc),), norm_weight (D,); the head's head_fn (hc, hc*D), head_scale (1,),
head_base (hc,). T is at most MAX_TOKENS, epsilons are positive and finite, and a
zero-stride (broadcast) view is refused rather than expanded into a copy.
"""
from __future__ import annotations

from typing import Any, Sequence, Tuple

# Tokens in one call: the library's bound on a forward (limits::kMaxTokens in src/core/limits.hpp).
MAX_TOKENS = 1 << 20


def tokens(t: int) -> int:
    """T within the per-call bound; checked on shapes, before anything is copied or allocated."""
    if t > MAX_TOKENS:
        raise ValueError(f"residual: {t} tokens exceed hcwarm's bound of {MAX_TOKENS} per call")
    return t


def broadcast(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether a view repeats memory: a zero stride on a dimension longer than 1 (np.broadcast_to, expand)."""
    return any(n > 1 and s == 0 for n, s in zip(shape, strides))


def broadcast_error(name: str, shape: Sequence[int], fix: str) -> ValueError:
    # Copying it to contiguous memory would be silent and can be gigabytes (one row seen as 2^20 tokens).
    return ValueError(f"{name}: a zero-stride (broadcast) view of shape {tuple(shape)}, which hcwarm does not expand "
                      f"into a copy; {fix}")


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
    return tokens(t), hc, d


def embed_dims(residual: Any, fn: Any) -> Tuple[int, int, int]:
    """(T, hc, D) of a first-layer call on the embedding (T, D): hc from fn's columns (hc*D)."""
    t, d = shape_of("residual", residual)
    if d < 1:
        raise ValueError(f"residual: D must be positive, got shape {(t, d)}")
    fn_shape = shape_of("fn", fn)
    hc = fn_shape[1] // d if len(fn_shape) == 2 else 0
    if len(fn_shape) != 2 or hc < 1 or fn_shape[1] != hc * d or fn_shape[0] != hc * (2 + hc):
        raise ValueError(f"residual: a 2-D residual is the first layer's embedding (T, D) = {(t, d)}, which needs "
                         f"fn of shape (hc*(2+hc), hc*{d}) for some hc, got fn {fn_shape}; streams are (T, hc, D)")
    return tokens(t), hc, d


def is_embed(residual: Any) -> bool:
    """Whether hc_pre's residual is the first layer's embedding (T, D) rather than streams (T, hc, D)."""
    shape = shape_of("residual", residual)
    if len(shape) not in (2, 3):
        raise ValueError(f"residual: expected (T, hc, D) streams or a (T, D) embedding, got shape {shape}")
    return len(shape) == 2


def pre_shapes(residual: Any, fn: Any, scale: Any, base: Any, norm_weight: Any) -> Tuple[int, int, int]:
    t, hc, d = embed_dims(residual, fn) if is_embed(residual) else pre_dims(residual)
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


def post_pre_shapes(x: Any, residual: Any, prev_post: Any, prev_comb: Any, fn: Any, scale: Any, base: Any,
                    norm_weight: Any) -> Tuple[int, int, int]:
    t, hc, d = pre_shapes(residual, fn, scale, base, norm_weight)
    if is_embed(residual):
        raise ValueError(f"residual: expected (T, hc, D) streams, got shape {shape_of('residual', residual)}")
    expect_shape("x", x, (t, d))
    expect_shape("prev_post", prev_post, (t, hc))
    expect_shape("prev_comb", prev_comb, (t, hc, hc))
    return t, hc, d


def head_shapes(residual: Any, head_fn: Any, head_scale: Any, head_base: Any) -> Tuple[int, int, int]:
    t, hc, d = pre_dims(residual)
    expect_shape("head_fn", head_fn, (hc, hc * d))
    expect_shape("head_scale", head_scale, (1,))
    expect_shape("head_base", head_base, (hc,))
    return t, hc, d


def _finite(name: str, v: Any, what: str = "finite") -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{name}: expected a float, got {type(v).__name__}")
    if not (v == v and abs(v) != float("inf")):
        raise ValueError(f"{name}: expected a {what} float, got {v}")
    return float(v)


def eps(name: str, v: Any) -> float:
    """An epsilon (hc_eps, rms_eps, norm_eps): > 0 and finite (0 or less can give NaN, silently)."""
    f = _finite(name, v, "positive finite")
    if not f > 0:
        raise ValueError(f"{name}: expected a positive finite float, got {v}")
    return f


_checked_constants: set = set()


def _remember(c: tuple) -> None:
    if len(_checked_constants) >= 4096:  # a server uses a few; the set starts over past that
        _checked_constants.clear()
    _checked_constants.add(c)


def constants_seen(sinkhorn_iters: Any, hc_eps: Any, rms_eps: Any, norm_eps: Any, post_mult: Any) -> None:
    """constants() for the C++ operators' callers, remembered per value tuple: a call repeats its
    constants, and a tuple is remembered only when its types are exactly int and floats (a bool
    equals 1 and would otherwise pass as a remembered int)."""
    c = (sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
    exact = (type(sinkhorn_iters) is int and type(hc_eps) is float and type(rms_eps) is float
             and type(norm_eps) is float and type(post_mult) is float)
    if exact and c in _checked_constants:
        return
    constants(*c)
    if exact:
        _remember(c)


def epsilons_seen(hc_eps: Any, rms_eps: Any) -> None:
    """eps() of the head's two epsilons, remembered as constants_seen does."""
    c = (hc_eps, rms_eps)
    exact = type(hc_eps) is float and type(rms_eps) is float
    if exact and c in _checked_constants:
        return
    eps("hc_eps", hc_eps)
    eps("rms_eps", rms_eps)
    if exact:
        _remember(c)


def constants(sinkhorn_iters: Any, hc_eps: Any, rms_eps: Any, norm_eps: Any, post_mult: Any) -> tuple:
    if isinstance(sinkhorn_iters, bool) or not isinstance(sinkhorn_iters, int):
        raise TypeError(f"sinkhorn_iters: expected an int, got {type(sinkhorn_iters).__name__}")
    if not 1 <= sinkhorn_iters <= 1000:
        raise ValueError(f"sinkhorn_iters: expected 1..1000, got {sinkhorn_iters}")
    return (sinkhorn_iters, eps("hc_eps", hc_eps), eps("rms_eps", rms_eps), eps("norm_eps", norm_eps),
            _finite("post_mult", post_mult))
