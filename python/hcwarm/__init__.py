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

from . import _core, _first_call, _ops
from ._context import get_context, parse_device
from ._plan import Plan, plan, request_args as _request_args, token_count_representatives  # noqa: F401
from ._core import (CompileError, HcwarmError, InvalidArgumentError, NotWarmedError,  # noqa: F401
                    UnavailableError, WaitTimeoutError, cuda_device_present)

__version__ = _core.__version__

from ._ops import (HC_EPS, POST_MULT, RMS_EPS, SINKHORN_ITERS, hc_head, hc_post, hc_post_pre,  # noqa: F401
                   hc_pre)

has_torch = _ops._torch is not None

__all__ = [
    "hc_pre", "hc_post", "hc_post_pre", "hc_head", "prewarm", "first_calls_pending", "check_coverage", "CoverageReport", "compiles_after_ready", "stats", "model_config", "PrewarmReport",
    "background_compiles_after_ready", "plan", "Plan", "token_count_representatives",
    "get_context", "HcwarmError", "InvalidArgumentError", "NotWarmedError", "CompileError", "UnavailableError",
    "WaitTimeoutError",
    "cuda_device_present", "has_torch", "__version__",
]

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
    skipped: str = ""  # why the mHC prewarm did not run ("" when it ran): HCWARM_MHC_PREWARM=0, a generic variant
    defaults: List[str] = field(default_factory=list)  # "field=value": config fields left out, the default used
    compiled_keys: List[str] = field(default_factory=list)  # keys this process compiled (its shard, then any misses)
    ready_time: float = 0.0  # time.time() when the runtime was marked ready
    rank: int = 0            # in the group (0 without one)
    world_size: int = 1
    shard_keys: List[str] = field(default_factory=list)  # with a group: the keys this rank was to compile
    # With a group: the kernel exchange (docs/PYTHON.md, "group"): other ranks' entries published into
    # this rank's cache, those refused ("<key> from rank <r>: <why>", compiled here instead), its seconds,
    # and the whole exchange report.
    received: int = 0
    refused: List[str] = field(default_factory=list)
    exchange_seconds: float = 0.0
    exchange: dict = field(default_factory=dict)
    first_calls: List[str] = field(default_factory=list)  # entry points prewarm called once (hcwarm.first_calls_pending)
    peak_bytes: int = 0  # peak memory above the context's own during the prewarm: host RSS on CPU, device memory on CUDA

    def as_dict(self) -> dict:
        return asdict(self)


def _config_args(config: Any) -> Tuple[str, Optional[str]]:
    if isinstance(config, dict):
        return "config dict", json.dumps(config)
    if isinstance(config, (str, os.PathLike)):
        return os.fspath(config), None
    raise TypeError(f"config: expected a preset name, a config.json path or a config dict, got {type(config).__name__}")


def model_config(config: Any) -> dict:
    """The fields of a preset ("dsv4-flash", "dsv4-pro"), config.json path or config dict that hcwarm uses,
    and `defaults`: "field=value" for each field with a default that the config left out."""
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
    context when this is the first call on it. The mHC kernels are planned whatever the model's
    attention; only HCWARM_MHC_PREWARM=0 or a generic variant skips them (the report's `skipped`).
    Config fields left out are reported with the default used (`defaults`). plan() says what
    this would build, without building it.

    group: a torch.distributed process group whose ranks prewarm together (torch is imported only
    then), so that each planned key is compiled once in the group whatever the host layout: rank r of
    N compiles keys r, r+N, ... into its cache, the ranks all-gather what they built (CPU tensors:
    on the group when it is gloo, else on a gloo group over its ranks), and each rank verifies every
    entry from a rank on another cache directory as `hcwarm cache import` does and publishes it into
    its own cache; then it prewarms as above, every key a disk hit. An entry that does not verify is
    refused naming the key and the sending rank and compiled here. Each collective waits at most
    HCWARM_GROUP_TIMEOUT_S (else the group's timeout): WaitTimeoutError when a rank stopped;
    CompileError naming the key and the rank when a rank failed to build one.
    Every rank must call it with the same configuration."""
    args = _request_args(config, chunked_prefill_size, dp_size, enable_dp_attention, fused_norm)
    if cache_dir is not None:
        context_settings["cache_dir"] = os.fspath(cache_dir)
    kind, index = parse_device(device)
    ctx = get_context(f"{kind}:{index}", **context_settings)
    mark = ctx.event_count()
    group_fields: dict = {}
    if group is not None:
        from ._group import group_ops

        rank, world, gather = group_ops(group)
        ex = ctx.prewarm_exchange(*args, rank, world, gather)
        group_fields = dict(rank=rank, world_size=world, shard_keys=ex["shard_keys"], received=ex["received"],
                            refused=ex["refused"], exchange_seconds=ex["shard_seconds"] + ex["exchange_seconds"],
                            exchange=ex)
    d = ctx.prewarm(*args)
    # The first call of every public op, here rather than in the first request (_first_call).
    first_calls = _first_call.after_prewarm(ctx, kind, index, model_config(config), fused_norm)
    return PrewarmReport(device=f"{kind}:{index}", compiled_keys=ctx.compiled_keys_since(mark),
                         ready_time=time.time(), first_calls=first_calls, **group_fields, **d)


def first_calls_pending() -> List[str]:
    """Public entry points (hcwarm.hc_pre, torch.ops.hcwarm.hc_pre, ...) not yet called in this process:
    empty after prewarm(), which calls each once so that no request pays a first call's one-time costs."""
    return _first_call.pending()


def compiles_after_ready(device: Any = None) -> int:
    """Kernel compiles since the device's context became ready in a call's own path: the call
    waited for the compile (0 when warmup covered every call). The background worker's are
    background_compiles_after_ready(); neither includes the other (docs/DESIGN.md, "Two counters")."""
    return get_context(device).compiles_after_ready()


def background_compiles_after_ready(device: Any = None) -> int:
    """Kernel compiles the background worker ran since the device's context became ready
    (HCWARM_TIERED: no call waited, a generic kernel served meanwhile; 0 when warmup covered every call)."""
    return get_context(device).background_compiles_after_ready()


def stats(device: Any = None) -> dict:
    """The device's JIT counters: compiled, loaded_from_disk, memory_hits; compiles_after_ready (in
    calls' own path) and background_compiles_after_ready (in the background worker), each compile
    after ready in exactly one; compile_seconds, failed; waited_for_compile and compile_wait_s
    (calls that blocked on a compile and their total wait); served_by_generic (calls a generic
    kernel served while their specialization compiled in the background, HCWARM_TIERED);
    background_compiled and background_failed."""
    return get_context(device).stats()
