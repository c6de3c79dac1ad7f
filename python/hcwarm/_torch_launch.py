"""The four mHC ops on torch tensors: checked, then launched on the caller's stream.

Both routes run this code: hcwarm.* calls it directly in eager mode, and the
torch.ops.hcwarm.* kernels (_torch_ops) call it from the dispatcher. A call's
signature (every tensor's shape, dtype and device, the constants and their types)
is checked in full the first time it is seen, with errors naming the argument;
later calls with that signature check only what the signature does not fix:
contiguity and, on CUDA, 16-byte alignment. What the full check established (the
op context, dims, input kind, scratch bytes) is kept per signature, so a steady
call costs a dictionary lookup, the output allocations and one crossing into C++.
A model's layers share their shapes, so an eager forward checks each op in full
once per token count, not once per layer.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import torch
from torch import Tensor

from . import _checks
from ._context import get_context
from ._numpy_ops import INPUT_EMBED, INPUT_RESIDUAL

_BF16 = torch.bfloat16
_F32 = torch.float32
_empty = torch.empty

# Signatures kept per op before the table starts over (a server sees a few per layer shape).
_MAX_SIGNATURES = 4096


def _raw_stream_fn():
    # The current stream's handle without building a torch.cuda.Stream object per call.
    fn = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if fn is not None:
        return fn
    return lambda index: torch.cuda.current_stream(index).cuda_stream


_raw_stream = _raw_stream_fn()


class _Plan:
    """What the full check of one signature established."""
    __slots__ = ("ctx", "t", "hc", "d", "input", "device", "stream_index", "workspace")

    def __init__(self, t: int, hc: int, d: int, device: torch.device, input_kind: int = 0):
        self.ctx = get_context(device)
        self.t, self.hc, self.d = t, hc, d
        self.input = input_kind
        self.device = device
        self.stream_index = device.index if device.type == "cuda" else None
        self.workspace = 0  # scratch bytes (CUDA hc_pre / hc_head at this T)


_plans: Dict[tuple, _Plan] = {}


def _remember(key: tuple, plan: _Plan) -> _Plan:
    if len(_plans) >= _MAX_SIGNATURES:
        _plans.clear()
    _plans[key] = plan
    return plan


def signatures_kept() -> int:
    """How many checked signatures the ops keep (for tests)."""
    return len(_plans)


def clear_signatures() -> None:
    _plans.clear()


# ---- the full checks (first call of a signature, and the fake kernels) -------------------------

def check_tensor(name: str, x: Any, dtype: torch.dtype, device: torch.device) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if x.dtype != dtype:
        raise TypeError(f"{name}: expected dtype {dtype}, got {x.dtype}")
    if x.device != device:
        raise ValueError(f"{name}: expected a tensor on {device} (where residual is), got one on {x.device}")
    if device.type not in ("cuda", "cpu"):
        raise ValueError(f"{name}: hcwarm runs on CUDA and CPU tensors, not {device.type}")


def check_tensors(dev: torch.device, *named: Tuple[str, Any, torch.dtype]) -> None:
    """check_tensor for each (name, tensor, dtype); a None tensor is an absent optional one."""
    for name, x, dtype in named:
        if x is not None:
            check_tensor(name, x, dtype, dev)


def _residual_device(residual: Any) -> torch.device:
    if not isinstance(residual, Tensor):
        raise TypeError(f"residual: expected a torch.Tensor, got {type(residual).__name__}")
    return residual.device


def check_pre(residual, fn, scale, base, norm_weight) -> Tuple[int, int, int]:
    check_tensors(_residual_device(residual), ("residual", residual, _BF16), ("fn", fn, _F32),
                  ("scale", scale, _F32), ("base", base, _F32), ("norm_weight", norm_weight, _BF16))
    return _checks.pre_shapes(residual, fn, scale, base, norm_weight)


def check_pre_buffers(y, post, comb, t: int, hc: int, d: int, dev: torch.device) -> None:
    check_tensors(dev, ("out[0] (y)", y, _BF16), ("out[1] (post)", post, _F32), ("out[2] (comb)", comb, _F32))
    _checks.pre_out_shapes((y, post, comb), t, hc, d)


def check_new_residual(new_residual, t: int, hc: int, d: int, dev: torch.device) -> None:
    check_tensor("new_residual", new_residual, _BF16, dev)
    _checks.expect_shape("new_residual", new_residual, (t, hc, d))


def check_pre_out(residual, fn, scale, base, norm_weight, y, post, comb) -> Tuple[int, int, int]:
    t, hc, d = check_pre(residual, fn, scale, base, norm_weight)
    check_pre_buffers(y, post, comb, t, hc, d, residual.device)
    return t, hc, d


def check_post(x, residual, post, comb, out) -> Tuple[int, int, int]:
    dev = _residual_device(residual)
    check_tensors(dev, ("x", x, _BF16), ("residual", residual, _BF16), ("post", post, _F32), ("comb", comb, _F32),
                  ("out", out, _BF16))
    t, hc, d = _checks.post_shapes(x, residual, post, comb)
    if out is not None:
        _checks.expect_shape("out", out, (t, hc, d))
    return t, hc, d


def check_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight) -> Tuple[int, int, int]:
    check_tensors(_residual_device(residual), ("x", x, _BF16), ("residual", residual, _BF16),
                  ("prev_post", prev_post, _F32), ("prev_comb", prev_comb, _F32), ("fn", fn, _F32),
                  ("scale", scale, _F32), ("base", base, _F32), ("norm_weight", norm_weight, _BF16))
    return _checks.post_pre_shapes(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight)


def check_post_pre_out(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, new_residual, y, post,
                       comb) -> Tuple[int, int, int]:
    t, hc, d = check_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight)
    check_new_residual(new_residual, t, hc, d, residual.device)
    check_pre_buffers(y, post, comb, t, hc, d, residual.device)
    return t, hc, d


def check_head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out) -> Tuple[int, int, int]:
    _checks.eps("hc_eps", hc_eps)
    _checks.eps("rms_eps", rms_eps)
    check_tensors(_residual_device(residual), ("residual", residual, _BF16), ("head_fn", head_fn, _F32),
                  ("head_scale", head_scale, _F32), ("head_base", head_base, _F32), ("out", out, _BF16))
    t, hc, d = _checks.head_shapes(residual, head_fn, head_scale, head_base)
    if out is not None:
        _checks.expect_shape("out", out, (t, d))
    return t, hc, d


# ---- what every call checks ---------------------------------------------------------------------

def _layout_error(names: Tuple[str, ...], tensors: Tuple[Optional[Tensor], ...]) -> None:
    """Raises naming the first tensor that is not contiguous or (on CUDA) not 16-byte aligned."""
    for name, x in zip(names, tensors):
        if x is not None and not x.is_contiguous():
            if _checks.broadcast(x.shape, x.stride()):
                raise _checks.broadcast_error(name, x.shape, "call .contiguous() first (a copy of that size)")
            raise ValueError(f"{name}: expected a contiguous tensor (strides {tuple(x.stride())} for shape "
                             f"{tuple(x.shape)}); call .contiguous() first")
    for name, x in zip(names, tensors):
        # The CUDA kernels move 16 bytes at a time (and TMA reads the residual).
        if x is not None and x.is_cuda and x.numel() > 0 and x.data_ptr() % 16 != 0:
            raise ValueError(f"{name}: data pointer {x.data_ptr():#x} is not 16-byte aligned (the CUDA kernels "
                             "move 16 bytes at a time); a fresh tensor or .clone() is aligned")


def _typed(consts: tuple) -> tuple:
    # The types too: True == 1 and 1 == 1.0, but a bool is no iteration count and an int no epsilon.
    return tuple(map(type, consts))


# ---- hc_pre -------------------------------------------------------------------------------------

_PRE_NAMES = ("residual", "fn", "scale", "base", "norm_weight", "out[0] (y)", "out[1] (post)", "out[2] (comb)")


def _pre_plan(key, residual, fn, scale, base, norm_weight, out, consts) -> _Plan:
    if out is not None and (not isinstance(out, (tuple, list)) or len(out) != 3):
        raise TypeError("out: expected a tuple (y, post, comb)")
    _checks.constants(*consts)
    if out is None:
        t, hc, d = check_pre(residual, fn, scale, base, norm_weight)
    else:
        t, hc, d = check_pre_out(residual, fn, scale, base, norm_weight, *out)
    plan = _Plan(t, hc, d, residual.device, INPUT_EMBED if residual.dim() == 2 else INPUT_RESIDUAL)
    if plan.stream_index is not None and t > 0:
        plan.workspace = plan.ctx.hc_pre_workspace_bytes(t, hc, d, *consts)
    return _remember(key, plan)


def hc_pre(residual: Tensor, fn: Tensor, scale: Tensor, base: Tensor, norm_weight: Optional[Tensor],
           out: Optional[Tuple[Tensor, Tensor, Tensor]], consts: tuple) -> Tuple[Tensor, Tensor, Tensor]:
    """(y, post, comb) of hc_pre, into out when given. consts: (sinkhorn_iters, hc_eps, rms_eps, norm_eps,
    post_mult)."""
    w = norm_weight
    key = (0, residual.shape, residual.dtype, residual.device, fn.shape, fn.dtype, fn.device, scale.shape,
           scale.dtype, scale.device, base.shape, base.dtype, base.device,
           None if w is None else (w.shape, w.dtype, w.device), consts, _typed(consts),
           None if out is None else tuple((o.shape, o.dtype, o.device) for o in out))
    plan = _plans.get(key) or _pre_plan(key, residual, fn, scale, base, w, out, consts)
    t, hc, d, dev = plan.t, plan.hc, plan.d, plan.device
    if out is None:
        y = _empty(t, d, dtype=_BF16, device=dev)
        post = _empty(t, hc, dtype=_F32, device=dev)
        comb = _empty(t, hc, hc, dtype=_F32, device=dev)
    else:
        y, post, comb = out
    if not (residual.is_contiguous() and fn.is_contiguous() and scale.is_contiguous() and base.is_contiguous()
            and (w is None or w.is_contiguous()) and y.is_contiguous() and post.is_contiguous()
            and comb.is_contiguous()):
        _layout_error(_PRE_NAMES, (residual, fn, scale, base, w, y, post, comb))
    if t == 0:
        return y, post, comb
    rp, fp, wp, yp = residual.data_ptr(), fn.data_ptr(), 0 if w is None else w.data_ptr(), y.data_ptr()
    index = plan.stream_index
    if index is not None and (rp | fp | wp | yp) & 15:
        _layout_error(_PRE_NAMES, (residual, fn, scale, base, w, y, post, comb))
    ws_bytes = plan.workspace
    ws = _empty(ws_bytes, dtype=torch.uint8, device=dev) if ws_bytes else None
    plan.ctx.hc_pre(t, hc, d, rp, fp, scale.data_ptr(), base.data_ptr(), wp, yp, post.data_ptr(), comb.data_ptr(),
                    None if index is None else _raw_stream(index), 0 if ws is None else ws.data_ptr(), ws_bytes,
                    *consts, plan.input)
    return y, post, comb


# ---- hc_post ------------------------------------------------------------------------------------

_POST_NAMES = ("x", "residual", "post", "comb", "out")


def _post_plan(key, x, residual, post, comb, out) -> _Plan:
    t, hc, d = check_post(x, residual, post, comb, out)
    return _remember(key, _Plan(t, hc, d, residual.device))


def hc_post(x: Tensor, residual: Tensor, post: Tensor, comb: Tensor, out: Optional[Tensor]) -> Tensor:
    """new_residual of the post step, into out (may be residual itself) when given."""
    key = (1, x.shape, x.dtype, x.device, residual.shape, residual.dtype, residual.device, post.shape, post.dtype,
           post.device, comb.shape, comb.dtype, comb.device, None if out is None else (out.shape, out.dtype, out.device))
    plan = _plans.get(key) or _post_plan(key, x, residual, post, comb, out)
    t = plan.t
    if out is None:
        out = _empty(t, plan.hc, plan.d, dtype=_BF16, device=plan.device)
    if not (x.is_contiguous() and residual.is_contiguous() and post.is_contiguous() and comb.is_contiguous()
            and out.is_contiguous()):
        _layout_error(_POST_NAMES, (x, residual, post, comb, out))
    if t == 0:
        return out
    xp, rp, op = x.data_ptr(), residual.data_ptr(), out.data_ptr()
    index = plan.stream_index
    if index is not None and (xp | rp | op) & 15:
        _layout_error(_POST_NAMES, (x, residual, post, comb, out))
    plan.ctx.hc_post(t, plan.hc, plan.d, xp, rp, post.data_ptr(), comb.data_ptr(), op,
                     None if index is None else _raw_stream(index))
    return out


# ---- hc_post_pre --------------------------------------------------------------------------------

_POST_PRE_NAMES = ("x", "residual", "prev_post", "prev_comb", "fn", "scale", "base", "norm_weight", "new_residual",
                   "out[0] (y)", "out[1] (post)", "out[2] (comb)")


def _post_pre_plan(key, x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, new_residual, out,
                   consts) -> _Plan:
    if out is not None and (not isinstance(out, (tuple, list)) or len(out) != 3):
        raise TypeError("out: expected a tuple (y, post, comb)")
    _checks.constants(*consts)
    t, hc, d = check_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight)
    dev = residual.device
    if new_residual is not None:
        check_new_residual(new_residual, t, hc, d, dev)
    if out is not None:
        check_pre_buffers(*out, t, hc, d, dev)
    plan = _Plan(t, hc, d, dev)
    if plan.stream_index is not None and t > 0:
        plan.workspace = plan.ctx.hc_pre_workspace_bytes(t, hc, d, *consts)
    return _remember(key, plan)


def hc_post_pre(x: Tensor, residual: Tensor, prev_post: Tensor, prev_comb: Tensor, fn: Tensor, scale: Tensor,
                base: Tensor, norm_weight: Optional[Tensor], new_residual: Optional[Tensor],
                out: Optional[Tuple[Tensor, Tensor, Tensor]], consts: tuple) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """(new_residual, y, post, comb) of the sublayer boundary, into the given buffers."""
    w, nr = norm_weight, new_residual
    key = (2, x.shape, x.dtype, x.device, residual.shape, residual.dtype, residual.device, prev_post.shape,
           prev_post.dtype, prev_post.device, prev_comb.shape, prev_comb.dtype, prev_comb.device, fn.shape, fn.dtype,
           fn.device, scale.shape, scale.dtype, scale.device, base.shape, base.dtype, base.device,
           None if w is None else (w.shape, w.dtype, w.device), consts, _typed(consts),
           None if nr is None else (nr.shape, nr.dtype, nr.device),
           None if out is None else tuple((o.shape, o.dtype, o.device) for o in out))
    plan = _plans.get(key) or _post_pre_plan(key, x, residual, prev_post, prev_comb, fn, scale, base, w, nr, out,
                                             consts)
    t, hc, d, dev = plan.t, plan.hc, plan.d, plan.device
    if nr is None:
        nr = _empty(t, hc, d, dtype=_BF16, device=dev)
    if out is None:
        y = _empty(t, d, dtype=_BF16, device=dev)
        post = _empty(t, hc, dtype=_F32, device=dev)
        comb = _empty(t, hc, hc, dtype=_F32, device=dev)
    else:
        y, post, comb = out
    tensors = (x, residual, prev_post, prev_comb, fn, scale, base, w, nr, y, post, comb)
    if not (x.is_contiguous() and residual.is_contiguous() and prev_post.is_contiguous()
            and prev_comb.is_contiguous() and fn.is_contiguous() and scale.is_contiguous() and base.is_contiguous()
            and (w is None or w.is_contiguous()) and nr.is_contiguous() and y.is_contiguous()
            and post.is_contiguous() and comb.is_contiguous()):
        _layout_error(_POST_PRE_NAMES, tensors)
    if t == 0:
        return nr, y, post, comb
    xp, rp, ppp, pcp, fp = x.data_ptr(), residual.data_ptr(), prev_post.data_ptr(), prev_comb.data_ptr(), fn.data_ptr()
    wp, nrp, yp, pp, cp = 0 if w is None else w.data_ptr(), nr.data_ptr(), y.data_ptr(), post.data_ptr(), comb.data_ptr()
    # The step reads the previous gates while it writes the new ones.
    if ppp == pp:
        raise ValueError("prev_post: must not be the buffer the new gates are written to (out)")
    if pcp == cp:
        raise ValueError("prev_comb: must not be the buffer the new gates are written to (out)")
    index = plan.stream_index
    if index is not None and (xp | rp | fp | wp | nrp | yp) & 15:
        _layout_error(_POST_PRE_NAMES, tensors)
    ws_bytes = plan.workspace
    ws = _empty(ws_bytes, dtype=torch.uint8, device=dev) if ws_bytes else None
    plan.ctx.hc_post_pre(t, hc, d, xp, rp, ppp, pcp, fp, scale.data_ptr(), base.data_ptr(), wp, nrp, yp, pp, cp,
                         None if index is None else _raw_stream(index), 0 if ws is None else ws.data_ptr(), ws_bytes,
                         *consts)
    return nr, y, post, comb


# ---- hc_head ------------------------------------------------------------------------------------

_HEAD_NAMES = ("residual", "head_fn", "head_scale", "head_base", "out")


def _head_plan(key, residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out) -> _Plan:
    t, hc, d = check_head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out)
    plan = _Plan(t, hc, d, residual.device)
    if plan.stream_index is not None and t > 0:
        # The one-pass head (CUDA, large T) needs scratch: from the caller's allocator, on its stream.
        plan.workspace = plan.ctx.hc_head_workspace_bytes(t, hc, d, hc_eps, rms_eps)
    return _remember(key, plan)


def hc_head(residual: Tensor, head_fn: Tensor, head_scale: Tensor, head_base: Tensor, hc_eps: float, rms_eps: float,
            out: Optional[Tensor]) -> Tensor:
    """y (T, D) of the mHC head, into out when given."""
    key = (3, residual.shape, residual.dtype, residual.device, head_fn.shape, head_fn.dtype, head_fn.device,
           head_scale.shape, head_scale.dtype, head_scale.device, head_base.shape, head_base.dtype, head_base.device,
           hc_eps, rms_eps, type(hc_eps), type(rms_eps), None if out is None else (out.shape, out.dtype, out.device))
    plan = _plans.get(key) or _head_plan(key, residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out)
    t = plan.t
    if out is None:
        out = _empty(t, plan.d, dtype=_BF16, device=plan.device)
    if not (residual.is_contiguous() and head_fn.is_contiguous() and head_scale.is_contiguous()
            and head_base.is_contiguous() and out.is_contiguous()):
        _layout_error(_HEAD_NAMES, (residual, head_fn, head_scale, head_base, out))
    if t == 0:
        return out
    rp, fp, op = residual.data_ptr(), head_fn.data_ptr(), out.data_ptr()
    index = plan.stream_index
    if index is not None and (rp | fp | op) & 15:
        _layout_error(_HEAD_NAMES, (residual, head_fn, head_scale, head_base, out))
    ws_bytes = plan.workspace
    ws = _empty(ws_bytes, dtype=torch.uint8, device=plan.device) if ws_bytes else None
    plan.ctx.hc_head(t, plan.hc, plan.d, rp, fp, head_scale.data_ptr(), head_base.data_ptr(), op,
                     None if index is None else _raw_stream(index), 0 if ws is None else ws.data_ptr(), ws_bytes,
                     hc_eps, rms_eps)
    return out
