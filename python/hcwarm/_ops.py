"""The public mHC ops: hc_pre, hc_post, hc_post_pre, hc_head on torch tensors or NumPy arrays.

A torch tensor goes to the torch.ops.hcwarm.* operators. Where they are the C++
library's (_torch_cpp), every call goes straight to their C++ entry (one crossing:
checks, outputs and launch in C++), and a runtime error they report by name is
raised here as that hcwarm type. Where they are the Python operators, an eager call
on a plain tensor skips the dispatcher for the checked launch (_torch_launch), and
anything PyTorch must see (tracing, subclasses, modes) goes through the dispatcher.
A NumPy array goes to the CPU backend (_numpy_ops).
"""
from __future__ import annotations

from typing import Any

from . import _checks, _first_call, _numpy_ops

try:  # PyTorch is optional; with it, the ops are registered as torch.ops.hcwarm.*
    import torch as _torch
except ImportError:  # pragma: no cover - depends on the environment
    _torch = None

_CPP = False
if _torch is not None:
    from . import _torch_launch, _torch_ops
    from ._torch_eager import direct as _direct

    _CPP = _torch_ops.CPP
    if _CPP:
        _Tensor = _torch.Tensor

        _is_compiling = _torch.compiler.is_compiling

        class _Entry:
            """An operator's C++ callable in eager mode (one Python frame less than
            OpOverload.__call__), and the OpOverload itself, which torch.compile traces."""
            __slots__ = ("eager", "traced")

            def __init__(self, name: str):
                self.traced = getattr(_torch.ops.hcwarm, name).default
                self.eager = getattr(self.traced, "_op", self.traced)

        _PRE, _PRE_OUT = _Entry("hc_pre"), _Entry("hc_pre_out")
        _POST, _POST_OUT = _Entry("hc_post"), _Entry("hc_post_out")
        _POST_PRE, _POST_PRE_OUT = _Entry("hc_post_pre"), _Entry("hc_post_pre_out")
        _HEAD, _HEAD_OUT = _Entry("hc_head"), _Entry("hc_head_out")
else:
    def _direct(x: Any) -> bool:
        return False


def _retyped(e: RuntimeError) -> BaseException:
    """A C++ operator's "NotWarmedError: ..." as hcwarm.NotWarmedError (other errors unchanged)."""
    from . import _core

    name, sep, rest = str(e).partition(": ")
    kind = getattr(_core, name, None) if sep and name.endswith("Error") else None
    return kind(rest) if isinstance(kind, type) and issubclass(kind, _core.HcwarmError) else e


def _out3(out: Any) -> Any:
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise TypeError("out: expected a tuple (y, post, comb)")
    return out

_HC_PRE = _first_call.entry_point("hcwarm.hc_pre")
_HC_POST = _first_call.entry_point("hcwarm.hc_post")
_HC_POST_PRE = _first_call.entry_point("hcwarm.hc_post_pre")
_HC_HEAD = _first_call.entry_point("hcwarm.hc_head")


# DeepSeek V4's constants (both sizes); hc_pre's keyword defaults.
SINKHORN_ITERS = 20
HC_EPS = 1e-6
RMS_EPS = 1e-6
POST_MULT = 2.0


def _is_tensor(x: Any) -> bool:
    return _torch is not None and isinstance(x, _torch.Tensor)


def hc_pre(residual, fn, scale, base, norm_weight=None, *, out=None, sinkhorn_iters: int = SINKHORN_ITERS,
           hc_eps: float = HC_EPS, rms_eps: float = RMS_EPS, norm_eps: float = RMS_EPS,
           post_mult: float = POST_MULT):
    """The mHC pre step: (y, post, comb) from residual (T, hc, D) bf16, fn (hc*(2+hc), hc*D) f32,
    scale (3,) f32, base (hc*(2+hc),) f32 and, when given, the sublayer's RMSNorm weight (D,) bf16
    fused into y. The first layer passes its token embedding (T, D) bf16 as residual: it stands for
    hc identical streams (hc from fn's columns), read once, with the results of hc_pre on the hc
    copies. out=(y, post, comb) writes the caller's buffers ((T, D) bf16, (T, hc) f32,
    (T, hc, hc) f32) and returns them. 0 <= T <= 2^20 (the bound per call). hc_eps, rms_eps and
    norm_eps are positive and finite, post_mult finite. Bad arguments, zero-stride (broadcast) views
    among them, raise TypeError / ValueError naming the argument, before anything is written."""
    if _CPP and isinstance(residual, _Tensor):
        _HC_PRE.pending = False
        _checks.constants_seen(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
        try:
            traced = _is_compiling()
            if out is None:
                op = _PRE.traced if traced else _PRE.eager
                return op(residual, fn, scale, base, norm_weight, sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
            y, post, comb = _out3(out)
            op = _PRE_OUT.traced if traced else _PRE_OUT.eager
            op(residual, fn, scale, base, norm_weight, sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult, y, post,
               comb)
            return tuple(out)
        except RuntimeError as e:
            raise _retyped(e) from None
    if _direct(residual):
        _HC_PRE.pending = False
        return _torch_launch.hc_pre(residual, fn, scale, base, norm_weight, out,
                                    (sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult))
    if _is_tensor(residual):
        ops = _torch.ops.hcwarm
        if out is None:
            return ops.hc_pre(residual, fn, scale, base, norm_weight, sinkhorn_iters, hc_eps, rms_eps, norm_eps,
                              post_mult)
        if not isinstance(out, (tuple, list)) or len(out) != 3:
            raise TypeError("out: expected a tuple (y, post, comb)")
        ops.hc_pre_out(residual, fn, scale, base, norm_weight, sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult,
                       out[0], out[1], out[2])
        return tuple(out)
    consts = _checks.constants(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
    _HC_PRE.pending = False
    return _numpy_ops.hc_pre(residual, fn, scale, base, norm_weight, out, consts)


def hc_post(x, residual, post, comb, *, out=None):
    """The mHC post step: new_residual[t, j] = post[t, j] * x[t] + sum_i comb[t, i, j] * residual[t, i],
    from x (T, D) bf16 (the sublayer's output), residual (T, hc, D) bf16, post (T, hc) f32 and comb
    (T, hc, hc) f32. out (T, hc, D) bf16 may be residual itself (in place)."""
    if _CPP and isinstance(residual, _Tensor):
        _HC_POST.pending = False
        try:
            traced = _is_compiling()
            if out is None:
                return (_POST.traced if traced else _POST.eager)(x, residual, post, comb)
            (_POST_OUT.traced if traced else _POST_OUT.eager)(x, residual, post, comb, out)
            return out
        except RuntimeError as e:
            raise _retyped(e) from None
    if _direct(residual):
        _HC_POST.pending = False
        return _torch_launch.hc_post(x, residual, post, comb, out)
    if _is_tensor(residual):
        ops = _torch.ops.hcwarm
        if out is None:
            return ops.hc_post(x, residual, post, comb)
        ops.hc_post_out(x, residual, post, comb, out)
        return out
    _HC_POST.pending = False
    return _numpy_ops.hc_post(x, residual, post, comb, out)


def hc_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight=None, *, new_residual=None,
                out=None, sinkhorn_iters: int = SINKHORN_ITERS, hc_eps: float = HC_EPS, rms_eps: float = RMS_EPS,
                norm_eps: float = RMS_EPS, post_mult: float = POST_MULT):
    """The sublayer boundary, hc_post then the next hc_pre in one call: from the previous sublayer's
    output x (T, D) bf16, the residual (T, hc, D) bf16 and the previous hc_pre's prev_post (T, hc) /
    prev_comb (T, hc, hc) f32, new_residual = hc_post(x, residual, prev_post, prev_comb) (bf16), then
    hc_pre(new_residual, fn, scale, base, norm_weight) with the next sublayer's parameters. Returns
    (new_residual, y, post, comb). new_residual= writes the caller's (T, hc, D) buffer, which may be
    residual itself (in place); out=(y, post, comb) as in hc_pre. prev_post/prev_comb must not be
    the out buffers. The results are those of the two calls (both bf16 roundings)."""
    if _CPP and isinstance(residual, _Tensor):
        _HC_POST_PRE.pending = False
        _checks.constants_seen(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
        try:
            traced = _is_compiling()
            if new_residual is None and out is None:
                op = _POST_PRE.traced if traced else _POST_PRE.eager
                return op(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, sinkhorn_iters, hc_eps,
                          rms_eps, norm_eps, post_mult)
            y, post, comb = _torch_ops.pre_outputs_like(residual) if out is None else _out3(out)
            if new_residual is None:
                new_residual = _torch.empty_like(residual, memory_format=_torch.contiguous_format)
            op = _POST_PRE_OUT.traced if traced else _POST_PRE_OUT.eager
            op(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, sinkhorn_iters, hc_eps, rms_eps,
               norm_eps, post_mult, new_residual, y, post, comb)
            return new_residual, y, post, comb
        except RuntimeError as e:
            raise _retyped(e) from None
    if _direct(residual):
        _HC_POST_PRE.pending = False
        return _torch_launch.hc_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, new_residual,
                                         out, (sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult))
    if _is_tensor(residual):
        ops = _torch.ops.hcwarm
        consts = (sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
        if new_residual is None and out is None:
            return ops.hc_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, *consts)
        if out is not None and (not isinstance(out, (tuple, list)) or len(out) != 3):
            raise TypeError("out: expected a tuple (y, post, comb)")
        if new_residual is None:
            new_residual = _torch.empty_like(residual, memory_format=_torch.contiguous_format)
        if out is None:
            out = _torch_ops.pre_outputs_like(residual)
        ops.hc_post_pre_out(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, *consts, new_residual,
                            out[0], out[1], out[2])
        return (new_residual, *out)
    consts = _checks.constants(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
    _HC_POST_PRE.pending = False
    return _numpy_ops.hc_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, new_residual, out,
                                  consts)


def hc_head(residual, head_fn, head_scale, head_base, *, out=None, hc_eps: float = HC_EPS,
            rms_eps: float = RMS_EPS):
    """The mHC head after the last layer: y (T, D) bf16 from residual (T, hc, D) bf16 with the model's
    hc_head_fn (hc, hc*D) f32, hc_head_scale (1,) f32 and hc_head_base (hc,) f32 (no Sinkhorn):
    y = sum_i (sigmoid(rms(x) * (head_fn @ x)[i] * head_scale + head_base[i]) + hc_eps) * residual[:, i].
    y then goes through the model's final RMSNorm. out= writes the caller's (T, D) bf16 buffer."""
    if _CPP and isinstance(residual, _Tensor):
        _HC_HEAD.pending = False
        _checks.epsilons_seen(hc_eps, rms_eps)
        try:
            traced = _is_compiling()
            if out is None:
                op = _HEAD.traced if traced else _HEAD.eager
                return op(residual, head_fn, head_scale, head_base, hc_eps, rms_eps)
            op = _HEAD_OUT.traced if traced else _HEAD_OUT.eager
            op(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out)
            return out
        except RuntimeError as e:
            raise _retyped(e) from None
    if _direct(residual):
        _HC_HEAD.pending = False
        return _torch_launch.hc_head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out)
    eps = (_checks.eps("hc_eps", hc_eps), _checks.eps("rms_eps", rms_eps))
    if _is_tensor(residual):
        ops = _torch.ops.hcwarm
        if out is None:
            return ops.hc_head(residual, head_fn, head_scale, head_base, *eps)
        ops.hc_head_out(residual, head_fn, head_scale, head_base, *eps, out)
        return out
    _HC_HEAD.pending = False
    return _numpy_ops.hc_head(residual, head_fn, head_scale, head_base, out, *eps)
