"""hc_pre / hc_post / hc_post_pre / hc_head on NumPy arrays, run by the CPU backend.

bf16 tensors travel as float32 arrays holding bf16 values, as the CLI's .npy
files do: inputs are rounded to bf16 (nearest, ties to even) on the way in, and
y / the new residual come back as float32 arrays of bf16 values. Arrays of
ml_dtypes' bfloat16 are taken as they are.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from . import _checks
from ._context import get_context


# hc_pre's input kinds, as the extension takes them.
INPUT_RESIDUAL = 0
INPUT_EMBED = 1


def contiguous(name: str, a: np.ndarray) -> np.ndarray:
    """a, or a C-contiguous copy of a strided view; a zero-stride (broadcast) view is refused, not expanded."""
    if a.flags.c_contiguous:
        return a
    if _checks.broadcast(a.shape, a.strides):
        raise _checks.broadcast_error(name, a.shape, "pass a contiguous array, e.g. x.copy()")
    return np.ascontiguousarray(a)


def to_bf16_bits(name: str, a: np.ndarray) -> np.ndarray:
    """uint16 bf16 bit patterns of a float32 (or bfloat16) array, C-contiguous."""
    if a.dtype.name == "bfloat16" and a.dtype.itemsize == 2:
        return contiguous(name, a).view(np.uint16)
    if a.dtype != np.float32:
        raise TypeError(f"{name}: expected float32 values (rounded to bf16) or bfloat16, got {a.dtype}")
    bits = contiguous(name, a).view(np.uint32)
    nan = np.isnan(a)
    rounded = (bits + (np.uint32(0x7FFF) + ((bits >> 16) & 1))) >> 16
    out = rounded.astype(np.uint16)
    if nan.any():
        out[nan.reshape(out.shape)] = 0x7FC0
    return out


def from_bf16_bits(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32(name: str, a: Any) -> np.ndarray:
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name}: expected a numpy.ndarray, got {type(a).__name__}")
    if a.dtype != np.float32:
        raise TypeError(f"{name}: expected float32, got {a.dtype}")
    return contiguous(name, a)


def array(name: str, a: Any) -> np.ndarray:
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name}: expected a numpy.ndarray, got {type(a).__name__}")
    return a


def out_array(name: str, a: Any) -> np.ndarray:
    array(name, a)
    if a.dtype != np.float32:
        raise TypeError(f"{name}: expected float32, got {a.dtype}")
    if not (a.flags.c_contiguous and a.flags.writeable):
        raise ValueError(f"{name}: expected a writeable C-contiguous float32 array")
    return a


def addr(a: Optional[np.ndarray]) -> int:
    return 0 if a is None else a.ctypes.data


def pre_outputs(out: Any, t: int, hc: int, d: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """hc_pre's (y, post, comb): the caller's out= arrays, checked, or new ones."""
    if out is None:
        return np.empty((t, d), np.float32), np.empty((t, hc), np.float32), np.empty((t, hc, hc), np.float32)
    y_out, post, comb = _checks.pre_out_shapes(out, t, hc, d)
    return out_array("out[0] (y)", y_out), out_array("out[1] (post)", post), out_array("out[2] (comb)", comb)


def hc_pre(residual: Any, fn: Any, scale: Any, base: Any, norm_weight: Any, out: Any,
           consts: tuple) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    for name, a in (("residual", residual), ("fn", fn), ("scale", scale), ("base", base)):
        array(name, a)
    if norm_weight is not None:
        array("norm_weight", norm_weight)
    t, hc, d = _checks.pre_shapes(residual, fn, scale, base, norm_weight)
    embed = _checks.is_embed(residual)
    r_bits = to_bf16_bits("residual", residual)
    fn_c, scale_c, base_c = f32("fn", fn), f32("scale", scale), f32("base", base)
    w_bits = None if norm_weight is None else to_bf16_bits("norm_weight", norm_weight)
    y_out, post, comb = pre_outputs(out, t, hc, d)
    if t == 0:
        return y_out, post, comb
    y_bits = np.empty((t, d), np.uint16)
    # Results land in scratch first: out= is written only once the call succeeded.
    post_tmp = post if out is None else np.empty_like(post)
    comb_tmp = comb if out is None else np.empty_like(comb)
    ctx = get_context("cpu")
    ctx.hc_pre(t, hc, d, addr(r_bits), addr(fn_c), addr(scale_c), addr(base_c), addr(w_bits), addr(y_bits),
               addr(post_tmp), addr(comb_tmp), None, 0, 0, *consts, INPUT_EMBED if embed else INPUT_RESIDUAL)
    y_out[...] = from_bf16_bits(y_bits)
    if out is not None:
        post[...] = post_tmp
        comb[...] = comb_tmp
    return y_out, post, comb


def hc_post(x: Any, residual: Any, post: Any, comb: Any, out: Any) -> np.ndarray:
    for name, a in (("x", x), ("residual", residual), ("post", post), ("comb", comb)):
        array(name, a)
    t, hc, d = _checks.post_shapes(x, residual, post, comb)
    x_bits = to_bf16_bits("x", x)
    r_bits = to_bf16_bits("residual", residual)
    post_c, comb_c = f32("post", post), f32("comb", comb)
    if out is not None:
        _checks.expect_shape("out", out, (t, hc, d))
        out = out_array("out", out)
    else:
        out = np.empty((t, hc, d), np.float32)
    if t == 0:
        return out
    new_bits = np.empty((t, hc, d), np.uint16)
    get_context("cpu").hc_post(t, hc, d, addr(x_bits), addr(r_bits), addr(post_c), addr(comb_c), addr(new_bits), None)
    out[...] = from_bf16_bits(new_bits)
    return out


def hc_post_pre(x: Any, residual: Any, prev_post: Any, prev_comb: Any, fn: Any, scale: Any, base: Any,
                norm_weight: Any, new_residual: Any, out: Any,
                consts: tuple) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    for name, a in (("x", x), ("residual", residual), ("prev_post", prev_post), ("prev_comb", prev_comb),
                    ("fn", fn), ("scale", scale), ("base", base)):
        array(name, a)
    if norm_weight is not None:
        array("norm_weight", norm_weight)
    t, hc, d = _checks.post_pre_shapes(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight)
    x_bits, r_bits = to_bf16_bits("x", x), to_bf16_bits("residual", residual)
    prev_post_c, prev_comb_c = f32("prev_post", prev_post), f32("prev_comb", prev_comb)
    fn_c, scale_c, base_c = f32("fn", fn), f32("scale", scale), f32("base", base)
    w_bits = None if norm_weight is None else to_bf16_bits("norm_weight", norm_weight)
    if new_residual is not None:
        _checks.expect_shape("new_residual", new_residual, (t, hc, d))
        new_residual = out_array("new_residual", new_residual)
    else:
        new_residual = np.empty((t, hc, d), np.float32)
    y_out, post, comb = pre_outputs(out, t, hc, d)
    if t == 0:
        return new_residual, y_out, post, comb
    # Everything lands in scratch first: the caller's buffers (residual itself
    # among them, for an in-place call) are written only once the call succeeded.
    new_bits = np.empty((t, hc, d), np.uint16)
    y_bits = np.empty((t, d), np.uint16)
    post_tmp, comb_tmp = np.empty((t, hc), np.float32), np.empty((t, hc, hc), np.float32)
    get_context("cpu").hc_post_pre(t, hc, d, addr(x_bits), addr(r_bits), addr(prev_post_c), addr(prev_comb_c),
                                   addr(fn_c), addr(scale_c), addr(base_c), addr(w_bits), addr(new_bits),
                                   addr(y_bits), addr(post_tmp), addr(comb_tmp), None, 0, 0, *consts)
    new_residual[...] = from_bf16_bits(new_bits)
    y_out[...] = from_bf16_bits(y_bits)
    post[...] = post_tmp
    comb[...] = comb_tmp
    return new_residual, y_out, post, comb


def hc_head(residual: Any, head_fn: Any, head_scale: Any, head_base: Any, out: Any, hc_eps: float,
            rms_eps: float) -> np.ndarray:
    for name, a in (("residual", residual), ("head_fn", head_fn), ("head_scale", head_scale),
                    ("head_base", head_base)):
        array(name, a)
    t, hc, d = _checks.head_shapes(residual, head_fn, head_scale, head_base)
    r_bits = to_bf16_bits("residual", residual)
    fn_c, scale_c, base_c = f32("head_fn", head_fn), f32("head_scale", head_scale), f32("head_base", head_base)
    if out is not None:
        _checks.expect_shape("out", out, (t, d))
        out = out_array("out", out)
    else:
        out = np.empty((t, d), np.float32)
    if t == 0:
        return out
    y_bits = np.empty((t, d), np.uint16)
    get_context("cpu").hc_head(t, hc, d, addr(r_bits), addr(fn_c), addr(scale_c), addr(base_c), addr(y_bits), None,
                               0, 0, hc_eps, rms_eps)
    out[...] = from_bf16_bits(y_bits)
    return out
