"""hc_pre / hc_post / hc_post_pre / hc_head as PyTorch operators (torch.ops.hcwarm.*).

Where the package was built with PyTorch, the operators are its C++ library's
(_torch_cpp: the dispatcher calls C++ kernels and Meta kernels directly). Otherwise
they are defined here with torch.library, with the same schemas: one kernel for the
CPU and CUDA dispatch keys and a fake implementation, so they trace under
torch.compile(fullgraph=True) and capture into CUDA graphs. The kernel is the
eager launch of _torch_launch, reached in one step from the dispatcher. On CUDA
a call runs on the tensors' own device and its current stream; outputs and
scratch come from PyTorch's caching allocator (inside a graph capture, from the
graph's pool). CPU tensors run the CPU backend synchronously.

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

from typing import Callable, Dict, List, Tuple

import torch
from torch import Tensor

from . import _checks, _first_call, _torch_cpp
from . import _torch_launch as launch

# Whether torch.ops.hcwarm.* are the C++ library's (else the definitions below).
CPP = _torch_cpp.load()

_BF16 = torch.bfloat16
_F32 = torch.float32

_lib = None if CPP else torch.library.Library("hcwarm", "DEF")  # noqa: TOR901 - the namespace is hcwarm's alone

_CONSTANTS = "int sinkhorn_iters, float hc_eps, float rms_eps, float norm_eps, float post_mult"
_PRE_INPUTS = "Tensor residual, Tensor fn, Tensor scale, Tensor base, Tensor? norm_weight"
_POST_PRE_INPUTS = ("Tensor x, Tensor residual, Tensor prev_post, Tensor prev_comb, Tensor fn, Tensor scale, "
                    "Tensor base, Tensor? norm_weight")
_HEAD_INPUTS = "Tensor residual, Tensor head_fn, Tensor head_scale, Tensor head_base, float hc_eps, float rms_eps"

# Every operator hcwarm registers: its qualified name for the first-call registry (_first_call),
# and its schema (the C++ library's must be the same: tested).
OPS: List[str] = []
SCHEMAS: Dict[str, str] = {}


class _CppEntryPoint:
    """A C++ operator in the first-call registry: pending until the library has counted a call."""
    __slots__ = ("name", "bit")

    def __init__(self, name: str, bit: int):
        self.name, self.bit = name, bit

    @property
    def pending(self) -> bool:
        return not (_torch_cpp.called() >> self.bit) & 1


def _define(schema: str, kernel: Callable, fake: Callable) -> None:
    name = schema.split("(", 1)[0]
    qualified = f"torch.ops.hcwarm.{name}"
    SCHEMAS[name] = schema
    if CPP:  # defined by the library: only its registry entry
        _first_call.register(_CppEntryPoint(qualified, _torch_cpp.names().index(name)))
        OPS.append(qualified)
        return
    first = _first_call.entry_point(qualified)

    def run(*args):
        first.pending = False
        return kernel(*args)

    run.__name__ = f"hcwarm_{name}"
    _lib.define(schema)
    for key in ("CPU", "CUDA"):
        _lib.impl(name, run, key)
    torch.library.register_fake(f"hcwarm::{name}", fake, lib=_lib)
    OPS.append(qualified)


def _empty_pre(t: int, hc: int, d: int, like: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    dev = like.device
    return (torch.empty((t, d), dtype=_BF16, device=dev), torch.empty((t, hc), dtype=_F32, device=dev),
            torch.empty((t, hc, hc), dtype=_F32, device=dev))


# ---- hc_pre ------------------------------------------------------------------------------------

def _pre(residual, fn, scale, base, norm_weight, sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult):
    return launch.hc_pre(residual, fn, scale, base, norm_weight, None,
                         (sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult))


def _pre_fake(residual, fn, scale, base, norm_weight, sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult):
    _checks.constants(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
    return _empty_pre(*launch.check_pre(residual, fn, scale, base, norm_weight), residual)


def _pre_out(residual, fn, scale, base, norm_weight, sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult, y, post,
             comb):
    launch.hc_pre(residual, fn, scale, base, norm_weight, (y, post, comb),
                  (sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult))


def _pre_out_fake(residual, fn, scale, base, norm_weight, sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult, y,
                  post, comb):
    _checks.constants(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
    launch.check_pre_out(residual, fn, scale, base, norm_weight, y, post, comb)


_define(f"hc_pre({_PRE_INPUTS}, {_CONSTANTS}) -> (Tensor, Tensor, Tensor)", _pre, _pre_fake)
_define(f"hc_pre_out({_PRE_INPUTS}, {_CONSTANTS}, Tensor(a!) y, Tensor(b!) post, Tensor(c!) comb) -> ()",
        _pre_out, _pre_out_fake)


# ---- hc_post -----------------------------------------------------------------------------------

def _post(x, residual, post, comb):
    return launch.hc_post(x, residual, post, comb, None)


def _post_fake(x, residual, post, comb):
    launch.check_post(x, residual, post, comb, None)
    return torch.empty_like(residual, memory_format=torch.contiguous_format)


def _post_out(x, residual, post, comb, out):
    launch.hc_post(x, residual, post, comb, out)


def _post_out_fake(x, residual, post, comb, out):
    launch.check_post(x, residual, post, comb, out)


_define("hc_post(Tensor x, Tensor residual, Tensor post, Tensor comb) -> Tensor", _post, _post_fake)
_define("hc_post_out(Tensor x, Tensor residual, Tensor post, Tensor comb, Tensor(a!) out) -> ()", _post_out,
        _post_out_fake)


# ---- hc_post_pre -------------------------------------------------------------------------------

def _post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, sinkhorn_iters, hc_eps, rms_eps,
              norm_eps, post_mult):
    return launch.hc_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, None, None,
                              (sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult))


def _post_pre_fake(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, sinkhorn_iters, hc_eps, rms_eps,
                   norm_eps, post_mult):
    _checks.constants(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
    t, hc, d = launch.check_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight)
    return (torch.empty_like(residual, memory_format=torch.contiguous_format), *_empty_pre(t, hc, d, residual))


def _post_pre_out(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, sinkhorn_iters, hc_eps, rms_eps,
                  norm_eps, post_mult, new_residual, y, post, comb):
    launch.hc_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, new_residual, (y, post, comb),
                       (sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult))


def _post_pre_out_fake(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, sinkhorn_iters, hc_eps,
                       rms_eps, norm_eps, post_mult, new_residual, y, post, comb):
    _checks.constants(sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult)
    launch.check_post_pre_out(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, new_residual, y, post,
                              comb)
    for name, prev, new in (("prev_post", prev_post, post), ("prev_comb", prev_comb, comb)):
        if prev is new:
            raise ValueError(f"{name}: must not be the buffer the new gates are written to (out)")


_define(f"hc_post_pre({_POST_PRE_INPUTS}, {_CONSTANTS}) -> (Tensor, Tensor, Tensor, Tensor)", _post_pre,
        _post_pre_fake)
_define(f"hc_post_pre_out({_POST_PRE_INPUTS}, {_CONSTANTS}, Tensor(a!) new_residual, Tensor(b!) y, "
        "Tensor(c!) post, Tensor(d!) comb) -> ()", _post_pre_out, _post_pre_out_fake)


# ---- hc_head -----------------------------------------------------------------------------------

def _head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps):
    return launch.hc_head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, None)


def _head_fake(residual, head_fn, head_scale, head_base, hc_eps, rms_eps):
    t, _, d = launch.check_head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, None)
    return torch.empty((t, d), dtype=_BF16, device=residual.device)


def _head_out(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out):
    launch.hc_head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out)


def _head_out_fake(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out):
    launch.check_head(residual, head_fn, head_scale, head_base, hc_eps, rms_eps, out)


_define(f"hc_head({_HEAD_INPUTS}) -> Tensor", _head, _head_fake)
_define(f"hc_head_out({_HEAD_INPUTS}, Tensor(a!) out) -> ()", _head_out, _head_out_fake)


def pre_outputs_like(residual: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """Fresh (y, post, comb) for an hc_pre / hc_post_pre on streams residual (T, hc, D)."""
    t, hc, d = _checks.pre_dims(residual)
    return _empty_pre(t, hc, d, residual)
