"""The four mHC ops on torch tensors: checked, then launched on the caller's stream.

Both routes run this code: hcwarm.* calls it directly in eager mode, and the
torch.ops.hcwarm.* kernels (_torch_ops) call it from the dispatcher. A call's
signature (shapes less the token count, dtypes, devices, constants) is checked in
full the first time it is seen, with errors naming the argument; later calls with
that signature check only what can change between them (the token counts agree,
contiguity, alignment, the token bound). The result of the full check (the op
context, dims and input kind) is kept per signature, so a steady call costs a
dictionary lookup, the output allocations and one crossing into C++.
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
    __slots__ = ("ctx", "hc", "d", "input", "device", "stream_index", "workspace")

    def __init__(self, ctx, hc: int, d: int, input_kind: int, device: torch.device):
        self.ctx = ctx
        self.hc = hc
        self.d = d
        self.input = input_kind
        self.device = device
        self.stream_index = device.index if device.type == "cuda" else None
        self.workspace: Dict[int, int] = {}  # T -> scratch bytes (CUDA hc_pre / hc_head)


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


def _residual_device(residual: Any) -> torch.device:
    if not isinstance(residual, Tensor):
        raise TypeError(f"residual: expected a torch.Tensor, got {type(residual).__name__}")
    return residual.device


def check_pre(residual, fn, scale, base, norm_weight) -> Tuple[int, int, int]:
    dev = _residual_device(residual)
    check_tensor("residual", residual, _BF16, dev)
    check_tensor("fn", fn, _F32, dev)
    check_tensor("scale", scale, _F32, dev)
    check_tensor("base", base, _F32, dev)
    if norm_weight is not None:
        check_tensor("norm_weight", norm_weight, _BF16, dev)
    return _checks.pre_shapes(residual, fn, scale, base, norm_weight)


def check_pre_out(residual, fn, scale, base, norm_weight, y, post, comb) -> Tuple[int, int, int]:
    t, hc, d = check_pre(residual, fn, scale, base, norm_weight)
    dev = residual.device
    check_tensor("out[0] (y)", y, _BF16, dev)
    check_tensor("out[1] (post)", post, _F32, dev)
    check_tensor("out[2] (comb)", comb, _F32, dev)
    _checks.pre_out_shapes((y, post, comb), t, hc, d)
    return t, hc, d


def check_post(x, residual, post, comb, out) -> Tuple[int, int, int]:
    dev = _residual_device(residual)
    check_tensor("x", x, _BF16, dev)
    check_tensor("residual", residual, _BF16, dev)
    check_tensor("post", post, _F32, dev)
    check_tensor("comb", comb, _F32, dev)
    t, hc, d = _checks.post_shapes(x, residual, post, comb)
    if out is not None:
        check_tensor("out", out, _BF16, dev)
        _checks.expect_shape("out", out, (t, hc, d))
    return t, hc, d


def check_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight) -> Tuple[int, int, int]:
    dev = _residual_device(residual)
    check_tensor("x", x, _BF16, dev)
    check_tensor("residual", residual, _BF16, dev)
    check_tensor("prev_post", prev_post, _F32, dev)
    check_tensor("prev_comb", prev_comb, _F32, dev)
    check_tensor("fn", fn, _F32, dev)
    check_tensor("scale", scale, _F32, dev)
    check_tensor("base", base, _F32, dev)
    if norm_weight is not None:
        check_tensor("norm_weight", norm_weight, _BF16, dev)
    return _checks.post_pre_shapes(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight)


def check_post_pre_out(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, new_residual, y, post,
                       comb) -> Tuple[int, int, int]:
    t, hc, d = check_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight)
    dev = residual.device
    check_tensor("new_residual", new_residual, _BF16, dev)
    _checks.expect_shape("new_residual", new_residual, (t, hc, d))
    check_tensor("out[0] (y)", y, _BF16, dev)
    check_tensor("out[1] (post)", post, _F32, dev)
    check_tensor("out[2] (comb)", comb, _F32, dev)
    _checks.pre_out_shapes((y, post, comb), t, hc, d)
    return t, hc, d


def check_head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out) -> Tuple[int, int, int]:
    _checks.eps("hc_eps", hc_eps)
    _checks.eps("rms_eps", rms_eps)
    dev = _residual_device(residual)
    check_tensor("residual", residual, _BF16, dev)
    check_tensor("head_fn", head_fn, _F32, dev)
    check_tensor("head_scale", head_scale, _F32, dev)
    check_tensor("head_base", head_base, _F32, dev)
    t, hc, d = _checks.head_shapes(residual, head_fn, head_scale, head_base)
    if out is not None:
        check_tensor("out", out, _BF16, dev)
        _checks.expect_shape("out", out, (t, d))
    return t, hc, d


# ---- what every call checks ---------------------------------------------------------------------

def _layout_error(names: Tuple[str, ...], tensors: Tuple[Optional[Tensor], ...]) -> None:
    """Raises naming the first tensor that is not contiguous or (on CUDA) not 16-byte aligned."""
    for name, x in zip(names, tensors):
        if x is None:
            continue
        if not x.is_contiguous():
            raise ValueError(f"{name}: expected a contiguous tensor (strides {tuple(x.stride())} for shape "
                             f"{tuple(x.shape)}); call .contiguous() first")
    for name, x in zip(names, tensors):
        # The CUDA kernels move 16 bytes at a time (and TMA reads the residual).
        if x is not None and x.is_cuda and x.numel() > 0 and x.data_ptr() % 16 != 0:
            raise ValueError(f"{name}: data pointer {x.data_ptr():#x} is not 16-byte aligned (the CUDA kernels "
                             "move 16 bytes at a time); a fresh tensor or .clone() is aligned")


def _ptr(x: Optional[Tensor]) -> int:
    return 0 if x is None else x.data_ptr()


def _tokens(t: int) -> int:
    if t > _checks.MAX_TOKENS:
        raise ValueError(f"residual: {t} tokens exceed hcwarm's bound of {_checks.MAX_TOKENS} per call")
    return t


def _stream(plan: _Plan):
    return None if plan.stream_index is None else _raw_stream(plan.stream_index)


def _sig(x: Optional[Tensor]):
    # A tensor's part of a signature: shape less its token dimension, dtype, device.
    return None if x is None else (x.shape[1:], x.dtype, x.device)


def _param_sig(x: Optional[Tensor]):
    return None if x is None else (x.shape, x.dtype, x.device)


def _consts_sig(consts: tuple):
    # The types too: True == 1 and 1 == 1.0, but a bool is no iteration count and an int no epsilon.
    return consts, tuple(map(type, consts))


def _workspace(plan: _Plan, t: int, sizer) -> Tuple[Optional[Tensor], int]:
    nbytes = plan.workspace.get(t)
    if nbytes is None:
        nbytes = sizer(t) if plan.stream_index is not None else 0
        if len(plan.workspace) >= _MAX_SIGNATURES:
            plan.workspace.clear()
        plan.workspace[t] = nbytes
    return (_empty(nbytes, dtype=torch.uint8, device=plan.device) if nbytes else None), nbytes


# ---- hc_pre -------------------------------------------------------------------------------------

_PRE_NAMES = ("residual", "fn", "scale", "base", "norm_weight", "out[0] (y)", "out[1] (post)", "out[2] (comb)")


def _pre_plan(residual, fn, scale, base, norm_weight, out, consts) -> _Plan:
    key = ("pre", _sig(residual), residual.dim(), _param_sig(fn), _param_sig(scale), _param_sig(base),
           _param_sig(norm_weight), _consts_sig(consts), None if out is None else tuple(_sig(o) for o in out))
    plan = _plans.get(key)
    if plan is not None:
        return plan
    _checks.constants(*consts)
    if out is None:
        t, hc, d = check_pre(residual, fn, scale, base, norm_weight)
    else:
        t, hc, d = check_pre_out(residual, fn, scale, base, norm_weight, *out)
    dev = residual.device
    return _remember(key, _Plan(get_context(dev), hc, d, INPUT_EMBED if residual.dim() == 2 else INPUT_RESIDUAL,
                                dev))


def hc_pre(residual: Tensor, fn: Tensor, scale: Tensor, base: Tensor, norm_weight: Optional[Tensor],
           out: Optional[Tuple[Tensor, Tensor, Tensor]], consts: tuple) -> Tuple[Tensor, Tensor, Tensor]:
    """(y, post, comb) of hc_pre, into out when given. consts: (sinkhorn_iters, hc_eps, rms_eps, norm_eps,
    post_mult)."""
    if out is not None and (not isinstance(out, (tuple, list)) or len(out) != 3):
        raise TypeError("out: expected a tuple (y, post, comb)")
    plan = _pre_plan(residual, fn, scale, base, norm_weight, out, consts)
    t = _tokens(residual.shape[0])
    hc, d = plan.hc, plan.d
    if out is None:
        dev = plan.device
        y = _empty((t, d), dtype=_BF16, device=dev)
        post = _empty((t, hc), dtype=_F32, device=dev)
        comb = _empty((t, hc, hc), dtype=_F32, device=dev)
    else:
        y, post, comb = out
        if y.shape[0] != t or post.shape[0] != t or comb.shape[0] != t:
            check_pre_out(residual, fn, scale, base, norm_weight, y, post, comb)  # raises naming the buffer
    tensors = (residual, fn, scale, base, norm_weight, y, post, comb)
    if not (residual.is_contiguous() and fn.is_contiguous() and scale.is_contiguous() and base.is_contiguous()
            and (norm_weight is None or norm_weight.is_contiguous()) and y.is_contiguous()
            and post.is_contiguous() and comb.is_contiguous()):
        _layout_error(_PRE_NAMES, tensors)
    if t == 0:
        return y, post, comb
    rp, fp, wp, yp = residual.data_ptr(), fn.data_ptr(), _ptr(norm_weight), y.data_ptr()
    if plan.stream_index is not None and (rp | fp | wp | yp) & 15:
        _layout_error(_PRE_NAMES, tensors)
    ctx = plan.ctx
    ws, ws_bytes = _workspace(plan, t, lambda n: ctx.hc_pre_workspace_bytes(n, hc, d, *consts))
    ctx.hc_pre(t, hc, d, rp, fp, scale.data_ptr(), base.data_ptr(), wp, yp, post.data_ptr(), comb.data_ptr(),
               _stream(plan), _ptr(ws), ws_bytes, *consts, plan.input)
    return y, post, comb


# ---- hc_post ------------------------------------------------------------------------------------

_POST_NAMES = ("x", "residual", "post", "comb", "out")


def hc_post(x: Tensor, residual: Tensor, post: Tensor, comb: Tensor, out: Optional[Tensor]) -> Tensor:
    """new_residual of the post step, into out (may be residual itself) when given."""
    key = ("post", _sig(x), _sig(residual), _sig(post), _sig(comb), _sig(out))
    plan = _plans.get(key)
    if plan is None:
        _, hc, d = check_post(x, residual, post, comb, out)
        plan = _remember(key, _Plan(get_context(residual.device), hc, d, INPUT_RESIDUAL, residual.device))
    t = _tokens(residual.shape[0])
    if x.shape[0] != t or post.shape[0] != t or comb.shape[0] != t or (out is not None and out.shape[0] != t):
        check_post(x, residual, post, comb, out)  # raises naming the argument
    if out is None:
        out = _empty((t, plan.hc, plan.d), dtype=_BF16, device=plan.device)
    tensors = (x, residual, post, comb, out)
    if not (x.is_contiguous() and residual.is_contiguous() and post.is_contiguous() and comb.is_contiguous()
            and out.is_contiguous()):
        _layout_error(_POST_NAMES, tensors)
    if t == 0:
        return out
    xp, rp, op = x.data_ptr(), residual.data_ptr(), out.data_ptr()
    if plan.stream_index is not None and (xp | rp | op) & 15:
        _layout_error(_POST_NAMES, tensors)
    plan.ctx.hc_post(t, plan.hc, plan.d, xp, rp, post.data_ptr(), comb.data_ptr(), op, _stream(plan))
    return out


# ---- hc_post_pre --------------------------------------------------------------------------------

_POST_PRE_NAMES = ("x", "residual", "prev_post", "prev_comb", "fn", "scale", "base", "norm_weight", "new_residual",
                   "out[0] (y)", "out[1] (post)", "out[2] (comb)")


def hc_post_pre(x: Tensor, residual: Tensor, prev_post: Tensor, prev_comb: Tensor, fn: Tensor, scale: Tensor,
                base: Tensor, norm_weight: Optional[Tensor], new_residual: Optional[Tensor],
                out: Optional[Tuple[Tensor, Tensor, Tensor]], consts: tuple) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """(new_residual, y, post, comb) of the sublayer boundary, into the given buffers."""
    if out is not None and (not isinstance(out, (tuple, list)) or len(out) != 3):
        raise TypeError("out: expected a tuple (y, post, comb)")
    key = ("post_pre", _sig(x), _sig(residual), _sig(prev_post), _sig(prev_comb), _param_sig(fn), _param_sig(scale),
           _param_sig(base), _param_sig(norm_weight), _consts_sig(consts), _sig(new_residual),
           None if out is None else tuple(_sig(o) for o in out))
    plan = _plans.get(key)
    full = plan is None
    if full:
        _checks.constants(*consts)
        _, hc, d = check_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight)
        plan = _remember(key, _Plan(get_context(residual.device), hc, d, INPUT_RESIDUAL, residual.device))
    t = _tokens(residual.shape[0])
    hc, d, dev = plan.hc, plan.d, plan.device
    if new_residual is None:
        new_residual = _empty((t, hc, d), dtype=_BF16, device=dev)
    if out is None:
        y = _empty((t, d), dtype=_BF16, device=dev)
        post = _empty((t, hc), dtype=_F32, device=dev)
        comb = _empty((t, hc, hc), dtype=_F32, device=dev)
    else:
        y, post, comb = out
    if full or x.shape[0] != t or prev_post.shape[0] != t or prev_comb.shape[0] != t or \
            new_residual.shape[0] != t or y.shape[0] != t or post.shape[0] != t or comb.shape[0] != t:
        check_post_pre_out(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, new_residual, y, post,
                           comb)
    tensors = (x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, new_residual, y, post, comb)
    if not all(v is None or v.is_contiguous() for v in tensors):
        _layout_error(_POST_PRE_NAMES, tensors)
    if t == 0:
        return new_residual, y, post, comb
    ptrs = [_ptr(v) for v in tensors]
    # The step reads the previous gates while it writes the new ones.
    if ptrs[2] == ptrs[10]:
        raise ValueError("prev_post: must not be the buffer the new gates are written to (out)")
    if ptrs[3] == ptrs[11]:
        raise ValueError("prev_comb: must not be the buffer the new gates are written to (out)")
    if plan.stream_index is not None and (ptrs[0] | ptrs[1] | ptrs[4] | ptrs[7] | ptrs[8] | ptrs[9]) & 15:
        _layout_error(_POST_PRE_NAMES, tensors)
    ctx = plan.ctx
    ws, ws_bytes = _workspace(plan, t, lambda n: ctx.hc_pre_workspace_bytes(n, hc, d, *consts))
    ctx.hc_post_pre(t, hc, d, *ptrs, _stream(plan), _ptr(ws), ws_bytes, *consts)
    return new_residual, y, post, comb


# ---- hc_head ------------------------------------------------------------------------------------

_HEAD_NAMES = ("residual", "head_fn", "head_scale", "head_base", "out")


def hc_head(residual: Tensor, head_fn: Tensor, head_scale: Tensor, head_base: Tensor, hc_eps: float, rms_eps: float,
            out: Optional[Tensor]) -> Tensor:
    """y (T, D) of the mHC head, into out when given."""
    key = ("head", _sig(residual), _param_sig(head_fn), _param_sig(head_scale), _param_sig(head_base),
           _consts_sig((hc_eps, rms_eps)), _sig(out))
    plan = _plans.get(key)
    if plan is None:
        _, hc, d = check_head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out)
        plan = _remember(key, _Plan(get_context(residual.device), hc, d, INPUT_RESIDUAL, residual.device))
    t = _tokens(residual.shape[0])
    if out is None:
        out = _empty((t, plan.d), dtype=_BF16, device=plan.device)
    elif out.shape[0] != t:
        check_head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out)
    tensors = (residual, head_fn, head_scale, head_base, out)
    if not (residual.is_contiguous() and head_fn.is_contiguous() and head_scale.is_contiguous()
            and head_base.is_contiguous() and out.is_contiguous()):
        _layout_error(_HEAD_NAMES, tensors)
    if t == 0:
        return out
    rp, fp, op = residual.data_ptr(), head_fn.data_ptr(), out.data_ptr()
    if plan.stream_index is not None and (rp | fp | op) & 15:
        _layout_error(_HEAD_NAMES, tensors)
    ctx, hc, d = plan.ctx, plan.hc, plan.d
    # The one-pass head (CUDA, large T) needs scratch: from the caller's allocator, on its stream.
    ws, ws_bytes = _workspace(plan, t, lambda n: ctx.hc_head_workspace_bytes(n, hc, d, hc_eps, rms_eps))
    ctx.hc_head(t, hc, d, rp, fp, head_scale.data_ptr(), head_base.data_ptr(), op, _stream(plan), _ptr(ws), ws_bytes,
                hc_eps, rms_eps)
    return out
