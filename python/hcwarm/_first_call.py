"""Every public entry point's first call, made by prewarm() instead of by the first request.

A process's first call of an op pays one-time costs the later calls do not: Python
and PyTorch imports behind the dispatcher, operator and signature caches, the
op context's own tables. Each entry point (hcwarm.hc_pre, torch.ops.hcwarm.hc_pre,
...) registers here and clears its `pending` flag when it runs; prewarm() runs
every one a few times on minimal valid inputs (one token, the model's shapes, kernels
it just loaded) and frees them. pending() names what is left, so an entry point
added without a warm call shows up there (and fails the test that checks it).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from . import _checks


class EntryPoint:
    __slots__ = ("name", "pending")

    def __init__(self, name: str):
        self.name = name
        self.pending = True


_entry_points: Dict[str, EntryPoint] = {}


def entry_point(name: str) -> EntryPoint:
    """The registry's flag for a public entry point (created pending)."""
    ep = _entry_points.get(name)
    if ep is None:
        ep = _entry_points[name] = EntryPoint(name)
    return ep


def register(ep: Any) -> None:
    """Adds an entry point whose `pending` is kept elsewhere (the C++ operators count their own calls)."""
    _entry_points[ep.name] = ep


def names() -> List[str]:
    return sorted(_entry_points)


def pending() -> List[str]:
    """Entry points not yet called in this process."""
    return sorted(n for n, ep in _entry_points.items() if ep.pending)


_PASSES = 3  # calls of each entry point by warm()


class _Inputs:
    """One-token inputs of the model's shapes on a device, from an array module (torch or NumPy)."""

    def __init__(self, hc: int, d: int, tokens: int, device: Optional[str]):
        mix = hc * (2 + hc)
        self.hc, self.d, self.t = hc, d, tokens
        if device is None:  # NumPy: bf16 values carried in float32 arrays
            import numpy as np

            def zeros(shape, bf16):
                return np.zeros(shape, dtype=np.float32)

            def ones(shape, bf16):
                return np.ones(shape, dtype=np.float32)
        else:
            torch = _torch()

            def zeros(shape, bf16):
                return torch.zeros(shape, dtype=torch.bfloat16 if bf16 else torch.float32, device=device)

            def ones(shape, bf16):
                return torch.ones(shape, dtype=torch.bfloat16 if bf16 else torch.float32, device=device)
        t = tokens
        self.residual = zeros((t, hc, d), True)
        self.embedding = zeros((t, d), True)
        self.x = zeros((t, d), True)
        self.fn = zeros((mix, hc * d), False)
        self.scale = ones((3,), False)
        self.base = zeros((mix,), False)
        self.norm_weight = ones((d,), True)
        self.post = zeros((t, hc), False)
        self.comb = zeros((t, hc, hc), False)
        self.head_fn = zeros((hc, hc * d), False)
        self.head_scale = ones((1,), False)
        self.head_base = zeros((hc,), False)

    def pre_outputs(self):
        import numpy as np

        t, hc, d = self.t, self.hc, self.d
        like = self.residual
        if isinstance(like, np.ndarray):
            return (np.empty((t, d), np.float32), np.empty((t, hc), np.float32), np.empty((t, hc, hc), np.float32))
        torch = _torch()

        return (torch.empty((t, d), dtype=torch.bfloat16, device=like.device),
                torch.empty((t, hc), device=like.device), torch.empty((t, hc, hc), device=like.device))


def warm(device: Optional[str], hc: int, d: int, consts: tuple, *, norm_tokens: int, plain_tokens: int) -> List[str]:
    """Runs every registered entry point _PASSES times on `device` ("cpu", "cuda:N"; None: NumPy arrays) and
    returns the names it ran. consts: (sinkhorn_iters, hc_eps, rms_eps, norm_eps, post_mult).
    norm_tokens / plain_tokens: the token count (1, or 0 where prewarm loaded no such kernel, so that
    nothing compiles) of the calls with and without a norm weight."""
    from . import _ops

    iters, hc_eps, rms_eps, norm_eps, post_mult = _checks.constants(*consts)
    kw = dict(sinkhorn_iters=iters, hc_eps=hc_eps, rms_eps=rms_eps, norm_eps=norm_eps, post_mult=post_mult)
    ran: List[str] = []
    with_norm = _Inputs(hc, d, norm_tokens, device)
    plain = with_norm if plain_tokens == norm_tokens else _Inputs(hc, d, plain_tokens, device)
    i = with_norm
    # More than one pass: CPython specializes an instruction on a later execution than its first,
    # so the first request runs the same specialized bytecode (and warm branch history) as the 100th.
    for _ in range(_PASSES):
        # hcwarm.*: each form an engine calls (norm weight or not, the first layer's embedding, out=).
        _ops.hc_pre(i.residual, i.fn, i.scale, i.base, i.norm_weight, **kw)
        _ops.hc_pre(plain.residual, plain.fn, plain.scale, plain.base, **kw)
        _ops.hc_pre(i.embedding, i.fn, i.scale, i.base, i.norm_weight, **kw)
        _ops.hc_pre(i.residual, i.fn, i.scale, i.base, i.norm_weight, out=i.pre_outputs(), **kw)
        _ops.hc_post(i.x, i.residual, i.post, i.comb)
        _ops.hc_post(i.x, i.residual, i.post, i.comb, out=i.residual)
        _ops.hc_post_pre(i.x, i.residual, i.post, i.comb, i.fn, i.scale, i.base, i.norm_weight, **kw)
        _ops.hc_post_pre(i.x, i.residual, i.post, i.comb, i.fn, i.scale, i.base, i.norm_weight,
                         new_residual=i.residual, out=i.pre_outputs(), **kw)
        _ops.hc_head(i.residual, i.head_fn, i.head_scale, i.head_base, hc_eps=hc_eps, rms_eps=rms_eps)
        _ops.hc_head(i.residual, i.head_fn, i.head_scale, i.head_base, out=i.x, hc_eps=hc_eps, rms_eps=rms_eps)
    ran += ["hcwarm.hc_pre", "hcwarm.hc_post", "hcwarm.hc_post_pre", "hcwarm.hc_head"]
    if device is not None:
        for _ in range(_PASSES):
            operators = _warm_operators(i, plain, consts)
        ran += operators
        if device.startswith("cuda"):
            _torch().cuda.synchronize(device)
    return ran


def _warm_operators(i: Any, plain: Any, consts: tuple) -> List[str]:
    """torch.ops.hcwarm.*: the dispatcher's route, once per operator."""
    ops = _torch().ops.hcwarm
    ops.hc_pre(i.residual, i.fn, i.scale, i.base, i.norm_weight, *consts)
    ops.hc_pre(plain.residual, plain.fn, plain.scale, plain.base, None, *consts)
    ops.hc_pre_out(i.residual, i.fn, i.scale, i.base, i.norm_weight, *consts, *i.pre_outputs())
    ops.hc_post(i.x, i.residual, i.post, i.comb)
    ops.hc_post_out(i.x, i.residual, i.post, i.comb, i.residual)
    ops.hc_post_pre(i.x, i.residual, i.post, i.comb, i.fn, i.scale, i.base, i.norm_weight, *consts)
    ops.hc_post_pre_out(i.x, i.residual, i.post, i.comb, i.fn, i.scale, i.base, i.norm_weight, *consts,
                        i.residual, *i.pre_outputs())
    hc_eps, rms_eps = consts[1], consts[2]
    ops.hc_head(i.residual, i.head_fn, i.head_scale, i.head_base, hc_eps, rms_eps)
    ops.hc_head_out(i.residual, i.head_fn, i.head_scale, i.head_base, hc_eps, rms_eps, i.x)
    return [f"torch.ops.hcwarm.{n}" for n in ("hc_pre", "hc_pre_out", "hc_post", "hc_post_out", "hc_post_pre",
                                                "hc_post_pre_out", "hc_head", "hc_head_out")]


def after_prewarm(ctx: Any, kind: str, index: int, model: dict, fused_norm: Optional[bool]) -> List[str]:
    """prewarm()'s last step on device kind:index: every entry point a few times, with the model's
    shapes and constants, on one token where prewarm loaded the kernel (no compile can follow) and on none elsewhere."""
    hc, d = int(model["hc_mult"]), int(model["hidden_size"])
    consts = (int(model["hc_sinkhorn_iters"]), float(model["hc_eps"]), float(model["rms_norm_eps"]),
              float(model["rms_norm_eps"]), 2.0)

    def tokens(norm: bool) -> int:
        return 1 if ctx.hc_pre_loaded(1, hc, d, norm, *consts, 0) else 0

    norm_tokens, plain_tokens = tokens(True), tokens(False)
    if fused_norm is False:  # only the unfused kernels were warmed: calls with a norm weight stay empty
        norm_tokens = 0
    ran: List[str] = []
    if kind == "cpu":  # NumPy arrays run the CPU backend
        ran += warm(None, hc, d, consts, norm_tokens=norm_tokens, plain_tokens=plain_tokens)
    if _torch() is not None:
        ran += warm(f"{kind}:{index}" if kind == "cuda" else "cpu", hc, d, consts, norm_tokens=norm_tokens,
                    plain_tokens=plain_tokens)
    return sorted(set(ran))


def _torch():
    # The torch the ops were registered with at import (None without PyTorch).
    from . import _ops

    return _ops._torch
