"""hc_pre / hc_post as PyTorch custom ops (torch.ops.hcwarm.*).

Registered with torch.library, each with a fake implementation, so they trace
under torch.compile(fullgraph=True) and capture into CUDA graphs. On CUDA a
call runs on the tensors' own device and torch.cuda.current_stream(); outputs
and scratch come from PyTorch's caching allocator (inside a graph capture, from
the graph's pool). CPU tensors run the CPU backend synchronously.

  hc_pre(residual, fn, scale, base, norm_weight, sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
      -> (y, post, comb)                  residual (T, hc, D), or the first layer's embedding (T, D)
  hc_pre_out(..., y, post, comb)          writes the caller's buffers
  hc_post(x, residual, post, comb) -> new_residual
  hc_post_out(x, residual, post, comb, out)   out may be residual itself
  hc_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, <constants>)
      -> (new_residual, y, post, comb)    the sublayer boundary
  hc_post_pre_out(..., new_residual, y, post, comb)   new_residual may be residual itself
  hc_head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps) -> y
  hc_head_out(..., y)
"""
from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from . import _checks
from ._context import get_context
from ._numpy_ops import INPUT_EMBED, INPUT_RESIDUAL

_BF16 = torch.bfloat16
_F32 = torch.float32


def _tensor(name: str, x, dtype: torch.dtype, device: torch.device) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if x.dtype != dtype:
        raise TypeError(f"{name}: expected dtype {dtype}, got {x.dtype}")
    if x.device != device:
        raise ValueError(f"{name}: expected a tensor on {device} (where residual is), got one on {x.device}")
    if device.type not in ("cuda", "cpu"):
        raise ValueError(f"{name}: hcwarm runs on CUDA and CPU tensors, not {device.type}")


def _contiguous(name: str, x: Tensor) -> None:
    if not x.is_contiguous():
        raise ValueError(f"{name}: expected a contiguous tensor (strides {tuple(x.stride())} for shape "
                         f"{tuple(x.shape)}); call .contiguous() first")


def _aligned(name: str, x: Optional[Tensor]) -> None:
    # The CUDA kernels move 16 bytes at a time (and TMA reads the residual).
    if x is not None and x.device.type == "cuda" and x.numel() > 0 and x.data_ptr() % 16 != 0:
        raise ValueError(f"{name}: data pointer {x.data_ptr():#x} is not 16-byte aligned (the CUDA kernels move "
                         "16 bytes at a time); a fresh tensor or .clone() is aligned")


def _check_pre(residual, fn, scale, base, norm_weight) -> Tuple[int, int, int]:
    if not isinstance(residual, Tensor):
        raise TypeError(f"residual: expected a torch.Tensor, got {type(residual).__name__}")
    dev = residual.device
    _tensor("residual", residual, _BF16, dev)
    _tensor("fn", fn, _F32, dev)
    _tensor("scale", scale, _F32, dev)
    _tensor("base", base, _F32, dev)
    if norm_weight is not None:
        _tensor("norm_weight", norm_weight, _BF16, dev)
    dims = _checks.pre_shapes(residual, fn, scale, base, norm_weight)
    return dims


def _check_pre_data(residual, fn, scale, base, norm_weight, y, post, comb) -> None:
    for name, x in (("residual", residual), ("fn", fn), ("scale", scale), ("base", base),
                    ("norm_weight", norm_weight), ("y", y), ("post", post), ("comb", comb)):
        if x is not None:
            _contiguous(name, x)
    for name, x in (("residual", residual), ("fn", fn), ("y", y), ("norm_weight", norm_weight)):
        _aligned(name, x)


def _stream(dev: torch.device):
    # PyTorch's current stream; its default stream is handle 0, CUDA's legacy default stream.
    return torch.cuda.current_stream(dev).cuda_stream if dev.type == "cuda" else None


def _dims(residual: Tensor, fn: Tensor) -> Tuple[int, int, int]:
    # (T, hc, D) of streams, or of the first layer's embedding (T, D) with hc from fn.
    return _checks.embed_dims(residual, fn) if residual.dim() == 2 else tuple(residual.shape)


def _workspace(ctx, dev: torch.device, t: int, hc: int, d: int, consts) -> Tuple[Optional[Tensor], int]:
    ws_bytes = ctx.hc_pre_workspace_bytes(t, hc, d, *consts) if dev.type == "cuda" else 0
    return (torch.empty(ws_bytes, dtype=torch.uint8, device=dev) if ws_bytes else None), ws_bytes


def _launch_pre(residual, fn, scale, base, norm_weight, y, post, comb, consts) -> None:
    t, hc, d = _dims(residual, fn)
    if t == 0:
        return
    dev = residual.device
    ctx = get_context(dev)
    ws, ws_bytes = _workspace(ctx, dev, t, hc, d, consts)
    ctx.hc_pre(t, hc, d, residual.data_ptr(), fn.data_ptr(), scale.data_ptr(), base.data_ptr(),
               0 if norm_weight is None else norm_weight.data_ptr(), y.data_ptr(), post.data_ptr(), comb.data_ptr(),
               _stream(dev), 0 if ws is None else ws.data_ptr(), ws_bytes, *consts,
               INPUT_EMBED if residual.dim() == 2 else INPUT_RESIDUAL)


def _outputs(t: int, hc: int, d: int, dev: torch.device) -> Tuple[Tensor, Tensor, Tensor]:
    return (torch.empty((t, d), dtype=_BF16, device=dev), torch.empty((t, hc), dtype=_F32, device=dev),
            torch.empty((t, hc, hc), dtype=_F32, device=dev))


def _pre_outputs(residual: Tensor, fn: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    return _outputs(*_dims(residual, fn), residual.device)


def pre_outputs_like(residual: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """Fresh (y, post, comb) for an hc_pre / hc_post_pre on streams residual (T, hc, D)."""
    _checks.pre_dims(residual)
    return _outputs(*residual.shape, residual.device)


@torch.library.custom_op("hcwarm::hc_pre", mutates_args=())
def hc_pre(residual: Tensor, fn: Tensor, scale: Tensor, base: Tensor, norm_weight: Optional[Tensor],
           sinkhorn_iters: int, hc_eps: float, rms_eps: float, norm_eps: float,
           post_mult: float) -> Tuple[Tensor, Tensor, Tensor]:
    consts = _checks.constants(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
    _check_pre(residual, fn, scale, base, norm_weight)
    y, post, comb = _pre_outputs(residual, fn)
    _check_pre_data(residual, fn, scale, base, norm_weight, y, post, comb)
    _launch_pre(residual, fn, scale, base, norm_weight, y, post, comb, consts)
    return y, post, comb


@hc_pre.register_fake
def _(residual, fn, scale, base, norm_weight, sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult):
    _checks.constants(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
    _check_pre(residual, fn, scale, base, norm_weight)
    return _pre_outputs(residual, fn)


@torch.library.custom_op("hcwarm::hc_pre_out", mutates_args=("y", "post", "comb"))
def hc_pre_out(residual: Tensor, fn: Tensor, scale: Tensor, base: Tensor, norm_weight: Optional[Tensor],
               sinkhorn_iters: int, hc_eps: float, rms_eps: float, norm_eps: float, post_mult: float,
               y: Tensor, post: Tensor, comb: Tensor) -> None:
    consts = _checks.constants(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
    _check_pre_out(residual, fn, scale, base, norm_weight, y, post, comb)
    _check_pre_data(residual, fn, scale, base, norm_weight, y, post, comb)
    _launch_pre(residual, fn, scale, base, norm_weight, y, post, comb, consts)


@hc_pre_out.register_fake
def _(residual, fn, scale, base, norm_weight, sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult, y, post, comb):
    _checks.constants(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
    _check_pre_out(residual, fn, scale, base, norm_weight, y, post, comb)


def _check_pre_out(residual, fn, scale, base, norm_weight, y, post, comb) -> None:
    t, hc, d = _check_pre(residual, fn, scale, base, norm_weight)
    dev = residual.device
    _tensor("out[0] (y)", y, _BF16, dev)
    _tensor("out[1] (post)", post, _F32, dev)
    _tensor("out[2] (comb)", comb, _F32, dev)
    _checks.pre_out_shapes((y, post, comb), t, hc, d)


def _check_post(x, residual, post, comb, out) -> None:
    if not isinstance(residual, Tensor):
        raise TypeError(f"residual: expected a torch.Tensor, got {type(residual).__name__}")
    dev = residual.device
    _tensor("x", x, _BF16, dev)
    _tensor("residual", residual, _BF16, dev)
    _tensor("post", post, _F32, dev)
    _tensor("comb", comb, _F32, dev)
    t, hc, d = _checks.post_shapes(x, residual, post, comb)
    if out is not None:
        _tensor("out", out, _BF16, dev)
        _checks.expect_shape("out", out, (t, hc, d))


def _launch_post(x, residual, post, comb, out) -> None:
    for name, v in (("x", x), ("residual", residual), ("post", post), ("comb", comb), ("out", out)):
        _contiguous(name, v)
    for name, v in (("x", x), ("residual", residual), ("out", out)):
        _aligned(name, v)
    t, hc, d = residual.shape
    if t == 0:
        return
    dev = residual.device
    get_context(dev).hc_post(t, hc, d, x.data_ptr(), residual.data_ptr(), post.data_ptr(), comb.data_ptr(),
                             out.data_ptr(), _stream(dev))


@torch.library.custom_op("hcwarm::hc_post", mutates_args=())
def hc_post(x: Tensor, residual: Tensor, post: Tensor, comb: Tensor) -> Tensor:
    _check_post(x, residual, post, comb, None)
    out = torch.empty_like(residual, memory_format=torch.contiguous_format)
    _launch_post(x, residual, post, comb, out)
    return out


@hc_post.register_fake
def _(x, residual, post, comb):
    _check_post(x, residual, post, comb, None)
    return torch.empty_like(residual, memory_format=torch.contiguous_format)


@torch.library.custom_op("hcwarm::hc_post_out", mutates_args=("out",))
def hc_post_out(x: Tensor, residual: Tensor, post: Tensor, comb: Tensor, out: Tensor) -> None:
    _check_post(x, residual, post, comb, out)
    _launch_post(x, residual, post, comb, out)


@hc_post_out.register_fake
def _(x, residual, post, comb, out):
    _check_post(x, residual, post, comb, out)


def _check_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight) -> Tuple[int, int, int]:
    if not isinstance(residual, Tensor):
        raise TypeError(f"residual: expected a torch.Tensor, got {type(residual).__name__}")
    dev = residual.device
    _tensor("x", x, _BF16, dev)
    _tensor("residual", residual, _BF16, dev)
    _tensor("prev_post", prev_post, _F32, dev)
    _tensor("prev_comb", prev_comb, _F32, dev)
    _tensor("fn", fn, _F32, dev)
    _tensor("scale", scale, _F32, dev)
    _tensor("base", base, _F32, dev)
    if norm_weight is not None:
        _tensor("norm_weight", norm_weight, _BF16, dev)
    return _checks.post_pre_shapes(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight)


def _check_post_pre_out(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, new_residual, y, post,
                        comb) -> None:
    t, hc, d = _check_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight)
    dev = residual.device
    _tensor("new_residual", new_residual, _BF16, dev)
    _checks.expect_shape("new_residual", new_residual, (t, hc, d))
    _tensor("out[0] (y)", y, _BF16, dev)
    _tensor("out[1] (post)", post, _F32, dev)
    _tensor("out[2] (comb)", comb, _F32, dev)
    _checks.pre_out_shapes((y, post, comb), t, hc, d)
    # The step reads the previous gates while it writes the new ones.
    for name, prev, new in (("prev_post", prev_post, post), ("prev_comb", prev_comb, comb)):
        if prev.numel() > 0 and prev.data_ptr() == new.data_ptr():
            raise ValueError(f"{name}: must not be the buffer the new gates are written to (out)")


def _launch_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, new_residual, y, post, comb,
                     consts) -> None:
    for name, v in (("x", x), ("residual", residual), ("prev_post", prev_post), ("prev_comb", prev_comb),
                    ("fn", fn), ("scale", scale), ("base", base), ("norm_weight", norm_weight),
                    ("new_residual", new_residual), ("y", y), ("post", post), ("comb", comb)):
        if v is not None:
            _contiguous(name, v)
    for name, v in (("x", x), ("residual", residual), ("fn", fn), ("norm_weight", norm_weight),
                    ("new_residual", new_residual), ("y", y)):
        _aligned(name, v)
    t, hc, d = residual.shape
    if t == 0:
        return
    dev = residual.device
    ctx = get_context(dev)
    ws, ws_bytes = _workspace(ctx, dev, t, hc, d, consts)
    ctx.hc_post_pre(t, hc, d, x.data_ptr(), residual.data_ptr(), prev_post.data_ptr(), prev_comb.data_ptr(),
                    fn.data_ptr(), scale.data_ptr(), base.data_ptr(),
                    0 if norm_weight is None else norm_weight.data_ptr(), new_residual.data_ptr(), y.data_ptr(),
                    post.data_ptr(), comb.data_ptr(), _stream(dev), 0 if ws is None else ws.data_ptr(), ws_bytes,
                    *consts)


@torch.library.custom_op("hcwarm::hc_post_pre", mutates_args=())
def hc_post_pre(x: Tensor, residual: Tensor, prev_post: Tensor, prev_comb: Tensor, fn: Tensor, scale: Tensor,
                base: Tensor, norm_weight: Optional[Tensor], sinkhorn_iters: int, hc_eps: float, rms_eps: float,
                norm_eps: float, post_mult: float) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    consts = _checks.constants(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
    _check_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight)
    new_residual = torch.empty_like(residual, memory_format=torch.contiguous_format)
    y, post, comb = pre_outputs_like(residual)
    _launch_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, new_residual, y, post, comb,
                     consts)
    return new_residual, y, post, comb


@hc_post_pre.register_fake
def _(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, sinkhorn_iters, hc_eps, rms_eps, norm_eps,
      post_mult):
    _checks.constants(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
    _check_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight)
    return (torch.empty_like(residual, memory_format=torch.contiguous_format), *pre_outputs_like(residual))


@torch.library.custom_op("hcwarm::hc_post_pre_out", mutates_args=("new_residual", "y", "post", "comb"))
def hc_post_pre_out(x: Tensor, residual: Tensor, prev_post: Tensor, prev_comb: Tensor, fn: Tensor, scale: Tensor,
                    base: Tensor, norm_weight: Optional[Tensor], sinkhorn_iters: int, hc_eps: float, rms_eps: float,
                    norm_eps: float, post_mult: float, new_residual: Tensor, y: Tensor, post: Tensor,
                    comb: Tensor) -> None:
    consts = _checks.constants(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
    _check_post_pre_out(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, new_residual, y, post, comb)
    _launch_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, new_residual, y, post, comb,
                     consts)


@hc_post_pre_out.register_fake
def _(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, sinkhorn_iters, hc_eps, rms_eps, norm_eps,
      post_mult, new_residual, y, post, comb):
    _checks.constants(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
    _check_post_pre_out(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, new_residual, y, post, comb)


def _check_head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out) -> Tuple[int, int, int]:
    _checks.eps("hc_eps", hc_eps)
    _checks.eps("rms_eps", rms_eps)
    if not isinstance(residual, Tensor):
        raise TypeError(f"residual: expected a torch.Tensor, got {type(residual).__name__}")
    dev = residual.device
    _tensor("residual", residual, _BF16, dev)
    _tensor("head_fn", head_fn, _F32, dev)
    _tensor("head_scale", head_scale, _F32, dev)
    _tensor("head_base", head_base, _F32, dev)
    t, hc, d = _checks.head_shapes(residual, head_fn, head_scale, head_base)
    if out is not None:
        _tensor("out", out, _BF16, dev)
        _checks.expect_shape("out", out, (t, d))
    return t, hc, d


def _launch_head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out) -> None:
    for name, v in (("residual", residual), ("head_fn", head_fn), ("head_scale", head_scale),
                    ("head_base", head_base), ("out", out)):
        _contiguous(name, v)
    for name, v in (("residual", residual), ("head_fn", head_fn), ("out", out)):
        _aligned(name, v)
    t, hc, d = residual.shape
    if t == 0:
        return
    dev = residual.device
    ctx = get_context(dev)
    # The one-pass head (CUDA, large T) needs scratch: from the caller's allocator, on its stream.
    ws_bytes = ctx.hc_head_workspace_bytes(t, hc, d, hc_eps, rms_eps) if dev.type == "cuda" else 0
    ws = torch.empty(ws_bytes, dtype=torch.uint8, device=dev) if ws_bytes else None
    ctx.hc_head(t, hc, d, residual.data_ptr(), head_fn.data_ptr(), head_scale.data_ptr(), head_base.data_ptr(),
                out.data_ptr(), _stream(dev), 0 if ws is None else ws.data_ptr(), ws_bytes, hc_eps, rms_eps)


def _head_output(residual: Tensor) -> Tensor:
    t, _, d = residual.shape
    return torch.empty((t, d), dtype=_BF16, device=residual.device)


@torch.library.custom_op("hcwarm::hc_head", mutates_args=())
def hc_head(residual: Tensor, head_fn: Tensor, head_scale: Tensor, head_base: Tensor, hc_eps: float,
            rms_eps: float) -> Tensor:
    _check_head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, None)
    out = _head_output(residual)
    _launch_head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out)
    return out


@hc_head.register_fake
def _(residual, head_fn, head_scale, head_base, hc_eps, rms_eps):
    _check_head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, None)
    return _head_output(residual)


@torch.library.custom_op("hcwarm::hc_head_out", mutates_args=("out",))
def hc_head_out(residual: Tensor, head_fn: Tensor, head_scale: Tensor, head_base: Tensor, hc_eps: float,
                rms_eps: float, out: Tensor) -> None:
    _check_head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out)
    _launch_head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out)


@hc_head_out.register_fake
def _(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out):
    _check_head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out)
