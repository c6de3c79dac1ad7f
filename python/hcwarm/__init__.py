"""hcwarm: DeepSeek V4's mHC kernels for serving engines, compiled before the
first request and run on the caller's tensors, stream and device.

    import hcwarm
    hcwarm.prewarm("dsv4-pro", chunked_prefill_size=16384, device="cuda:0")   # at start-up
    hcwarm.check_coverage(device="cuda:0")                                    # optional: raises naming a miss
    y, post, comb = hcwarm.hc_pre(embedding, fn, scale, base, norm_weight)    # first layer: (T, D)
    residual, y, post, comb = hcwarm.hc_post_pre(out, residual, post, comb, fn, scale, base, norm_weight,
                                                 new_residual=residual)     # each sublayer boundary
    residual = hcwarm.hc_post(out, residual, post, comb, out=residual)        # after the last sublayer
    hidden = hcwarm.hc_head(residual, head_fn, head_scale, head_base)         # (T, D) for the final norm
    assert hcwarm.compiles_after_ready() == 0

Works on torch tensors (CUDA or CPU; the ops are also torch.ops.hcwarm.*) and
on NumPy arrays (CPU backend; bf16 values carried in float32 arrays). PyTorch
is optional: without it the NumPy path works alone.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Any, List, Optional, Tuple

from . import _checks, _core, _numpy_ops
from ._context import get_context, parse_device
from ._core import (CompileError, HcwarmError, InvalidArgumentError, NotWarmedError,  # noqa: F401
                    UnavailableError, WaitTimeoutError, cuda_device_present)

__version__ = _core.__version__

try:  # PyTorch is optional; with it, the ops are registered as torch.ops.hcwarm.*
    import torch as _torch
except ImportError:  # pragma: no cover - depends on the environment
    _torch = None

if _torch is not None:
    from . import _torch_ops  # noqa: F401  (registers the custom ops)

has_torch = _torch is not None

__all__ = [
    "hc_pre", "hc_post", "hc_post_pre", "hc_head", "prewarm", "check_coverage", "CoverageReport", "compiles_after_ready", "stats", "model_config", "PrewarmReport",
    "get_context", "HcwarmError", "InvalidArgumentError", "NotWarmedError", "CompileError", "UnavailableError",
    "WaitTimeoutError",
    "cuda_device_present", "has_torch", "__version__",
]

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
    (T, hc, hc) f32) and returns them. Any T >= 0. Bad arguments raise TypeError / ValueError
    naming the argument, before anything is written."""
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
    return _numpy_ops.hc_pre(residual, fn, scale, base, norm_weight, out, consts)


def hc_post(x, residual, post, comb, *, out=None):
    """The mHC post step: new_residual[t, j] = post[t, j] * x[t] + sum_i comb[t, i, j] * residual[t, i],
    from x (T, D) bf16 (the sublayer's output), residual (T, hc, D) bf16, post (T, hc) f32 and comb
    (T, hc, hc) f32. out (T, hc, D) bf16 may be residual itself (in place)."""
    if _is_tensor(residual):
        ops = _torch.ops.hcwarm
        if out is None:
            return ops.hc_post(x, residual, post, comb)
        ops.hc_post_out(x, residual, post, comb, out)
        return out
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
    return _numpy_ops.hc_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight, new_residual, out,
                                  consts)


def hc_head(residual, head_fn, head_scale, head_base, *, out=None, hc_eps: float = HC_EPS,
            rms_eps: float = RMS_EPS):
    """The mHC head after the last layer: y (T, D) bf16 from residual (T, hc, D) bf16 with the model's
    hc_head_fn (hc, hc*D) f32, hc_head_scale (1,) f32 and hc_head_base (hc,) f32 (no Sinkhorn):
    y = sum_i (sigmoid(rms(x) * (head_fn @ x)[i] * head_scale + head_base[i]) + hc_eps) * residual[:, i].
    y then goes through the model's final RMSNorm. out= writes the caller's (T, D) bf16 buffer."""
    eps = (_checks.eps("hc_eps", hc_eps), _checks.eps("rms_eps", rms_eps))
    if _is_tensor(residual):
        ops = _torch.ops.hcwarm
        if out is None:
            return ops.hc_head(residual, head_fn, head_scale, head_base, *eps)
        ops.hc_head_out(residual, head_fn, head_scale, head_base, *eps, out)
        return out
    return _numpy_ops.hc_head(residual, head_fn, head_scale, head_base, out, *eps)


@dataclass
class CoverageReport:
    """What check_coverage() ran: op calls, one token count per split bucket of [1, max_num_tokens]."""
    device: str
    calls: int
    token_counts: List[int]
    max_num_tokens: int
    missing: List[str] = field(default_factory=list)  # "<kernel>: <why>", empty when warmup covered everything

    @property
    def ok(self) -> bool:
        return not self.missing


def check_coverage(device: Any = None, *, fused_norm: bool = True, raise_on_miss: bool = True) -> CoverageReport:
    """Proof that the last prewarm() on `device` covered the whole mHC family: with compiling
    switched off, every op (hc_pre on residual streams and on the first layer's embedding, hc_post,
    hc_head) runs once at one token count of every split bucket of that prewarm's [1, max_num_tokens].
    A kernel prewarm did not load, a refused or failing call, or a kernel fetched from disk during
    the check is a miss: NotWarmedError naming each (or, with raise_on_miss=False, listed in the
    report's `missing`). fused_norm: check the calls with a norm weight (as prewarm's default)."""
    if fused_norm not in (True, False):
        raise TypeError(f"fused_norm: expected True or False, got {fused_norm!r}")
    kind, index = parse_device(device)
    d = get_context(f"{kind}:{index}").check_coverage(fused_norm)
    report = CoverageReport(device=f"{kind}:{index}", **d)
    if report.missing and raise_on_miss:
        raise NotWarmedError(f"warmup missed {len(report.missing)} mHC kernel call(s) on {report.device}: "
                             + "; ".join(report.missing))
    return report


@dataclass
class PrewarmReport:
    """What prewarm() did: JIT keys planned and where each came from, the time, and the
    representative token counts it ran (one per split bucket of [1, max_num_tokens])."""
    device: str
    keys: int
    compiled: int
    loaded_from_disk: int
    memory_hits: int
    seconds: float
    max_num_tokens: int
    num_sms: int
    token_counts: List[int] = field(default_factory=list)
    skipped: str = ""  # why the mHC prewarm did not run ("" when it ran)
    compiled_keys: List[str] = field(default_factory=list)  # keys this process compiled (its shard, then any misses)
    ready_time: float = 0.0  # time.time() when the runtime was marked ready
    rank: int = 0            # in the group (0 without one)
    world_size: int = 1
    shard_keys: List[str] = field(default_factory=list)  # with a group: the keys this rank was to compile
    barrier_seconds: float = 0.0  # with a group: time spent in the barrier, waiting for the other ranks

    def as_dict(self) -> dict:
        return asdict(self)


def _config_args(config: Any) -> Tuple[str, Optional[str]]:
    if isinstance(config, dict):
        return "config dict", json.dumps(config)
    if isinstance(config, (str, os.PathLike)):
        return os.fspath(config), None
    raise TypeError(f"config: expected a preset name, a config.json path or a config dict, got {type(config).__name__}")


def model_config(config: Any) -> dict:
    """The fields of a preset ("dsv4-flash", "dsv4-pro"), config.json path or config dict that hcwarm uses."""
    return _core.model_config(*_config_args(config))


def prewarm(config: Any, *, chunked_prefill_size: Optional[int] = None, dp_size: int = 1,
            enable_dp_attention: bool = False, device: Any = None, cache_dir: Optional[str] = None,
            fused_norm: Optional[bool] = True, group: Any = None, **context_settings: Any) -> PrewarmReport:
    """Compiles (or loads from the disk cache) every kernel hc_pre / hc_post can reach on `device` for
    T in [1, max_num_tokens] of this serving configuration, loads each into its op, and marks the
    runtime ready: later compiles are counted (compiles_after_ready) or, with strict_warmup, refused.
    max_num_tokens is chunked_prefill_size (default: 8192, or 16384 on GPUs with 160 GB or more),
    divided by dp_size once when enable_dp_attention is set. fused_norm: warm calls with a norm
    weight (True, as DeepSeek V4's layers make them), without one (False), or both (None).
    context_settings (num_sms, strict_warmup, jit, jobs, variant, progress) configure the device's
    context when this is the first call on it.

    group: a torch.distributed process group whose ranks prewarm together (torch is imported only
    then). Rank r of N first compiles planned keys r, r+N, r+2N, ... into the cache directory, then
    waits in torch.distributed.barrier(group), then prewarms as above: for ranks that share the cache
    directory (one host, or a shared file system) every key then is a disk hit, so each key is
    compiled once in the group and no rank sits in a later collective while another compiles.
    Ranks that do not share one compile what they miss after the barrier, which is still correct.
    Every rank must call it with the same configuration."""
    name, text = _config_args(config)
    for arg, value in (("chunked_prefill_size", chunked_prefill_size), ("dp_size", dp_size)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"{arg}: expected an int, got {type(value).__name__}")
    if fused_norm not in (True, False, None):
        raise TypeError(f"fused_norm: expected True, False or None, got {fused_norm!r}")
    if cache_dir is not None:
        context_settings["cache_dir"] = os.fspath(cache_dir)
    kind, index = parse_device(device)
    ctx = get_context(f"{kind}:{index}", **context_settings)
    args = (name, text, chunked_prefill_size, dp_size, bool(enable_dp_attention), fused_norm is not False,
            fused_norm is not True)
    mark = ctx.event_count()
    group_fields: dict = {}
    if group is not None:
        from ._group import group_ops

        rank, world, barrier = group_ops(group)
        error: Optional[Exception] = None
        shard: List[str] = []
        try:
            shard = ctx.prewarm_shard(*args, rank, world)
        except Exception as e:  # the other ranks wait in the barrier: reach it, then raise
            error = e
        t0 = time.monotonic()
        barrier()
        if error is not None:
            raise error
        group_fields = dict(rank=rank, world_size=world, shard_keys=shard, barrier_seconds=time.monotonic() - t0)
    d = ctx.prewarm(*args)
    return PrewarmReport(device=f"{kind}:{index}", compiled_keys=ctx.compiled_keys_since(mark),
                         ready_time=time.time(), **group_fields, **d)


def compiles_after_ready(device: Any = None) -> int:
    """Kernel compiles since the device's context became ready (0 when warmup covered every call)."""
    return get_context(device).compiles_after_ready()


def stats(device: Any = None) -> dict:
    """The device's JIT counters: compiled, loaded_from_disk, memory_hits, compiles_after_ready,
    compile_seconds, failed; waited_for_compile and compile_wait_s (calls that blocked on a compile
    and their total wait); served_by_generic (calls a generic kernel served while their
    specialization compiled in the background, HCWARM_TIERED); background_compiled and
    background_failed."""
    return get_context(device).stats()
