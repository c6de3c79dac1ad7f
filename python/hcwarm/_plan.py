"""The warmup plan without warming: split buckets, representative token counts
and the JIT keys prewarm() would build, all from the C++ plan. Needs neither
PyTorch nor a GPU.

The SM count, when not given, is resolved as an op context resolves it
(OpContextOptions::num_sms in src/runtime/op_context.hpp):

1. the CUDA device's SM count: the device of the context for plan(); for
   token_count_representatives(), torch's current device when torch is already
   imported and sees CUDA, else device 0 when the driver has one;
2. else the HCWARM_NUM_SMS environment variable;
3. else 132 (an H200).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, List, Optional, Tuple

from . import _core
from ._context import existing_contexts, parse_device

_INT64_MAX = (1 << 63) - 1


def _int_arg(name: str, value: Any, minimum: Optional[int] = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if value > _INT64_MAX or (minimum is not None and value < minimum):
        bound = f">= {minimum}" if minimum is not None else "a 64-bit int"
        raise ValueError(f"{name}: expected {bound}, got {value}")
    return value


def _num_sms_arg(num_sms: Any) -> Optional[int]:
    return None if num_sms is None else _int_arg("num_sms", num_sms, 1)


def default_num_sms() -> int:
    """The SM count token_count_representatives() uses when num_sms is None (the module's order)."""
    kind, index = parse_device(None)
    return _core.default_num_sms(index if kind == "cuda" else None)


def token_count_representatives(max_num_tokens: int, hc_hidden_size: int, num_sms: Optional[int] = None) -> List[int]:
    """One token count per split bucket of [1, max_num_tokens], the largest of its bucket, by
    num_splits ascending (upstream's rule; empty for max_num_tokens <= 0). hc_hidden_size is
    hc_mult * hidden_size; num_sms None: see the module's order."""
    m = _int_arg("max_num_tokens", max_num_tokens)
    k = _int_arg("hc_hidden_size", hc_hidden_size, 1)
    sms = _num_sms_arg(num_sms)
    if m <= 0:
        return []
    return list(_core.representatives(m, k, default_num_sms() if sms is None else sms))


def request_args(config: Any, chunked_prefill_size: Any, dp_size: Any, enable_dp_attention: Any,
                 fused_norm: Any) -> tuple:
    """The C++ prewarm request's arguments (Context.prewarm, planned_keys, plan), checked here
    so that a bad one raises TypeError / ValueError naming it."""
    from . import _config_args  # the package's config handling; imported late, the package imports this module

    name, text = _config_args(config)
    if chunked_prefill_size is not None:
        _int_arg("chunked_prefill_size", chunked_prefill_size)
    _int_arg("dp_size", dp_size, 1)
    if fused_norm not in (True, False, None):
        raise TypeError(f"fused_norm: expected True, False or None, got {fused_norm!r}")
    return (name, text, chunked_prefill_size, dp_size, bool(enable_dp_attention), fused_norm is not False,
            fused_norm is not True)


@dataclass
class Plan:
    """What prewarm() would warm on a device for a serving configuration, without building it."""
    device: str
    model: str                 # the preset name, config.json path or "config dict"
    hidden_size: int
    hc_mult: int
    max_num_tokens: int        # chunked_prefill_size (or its default), divided by dp_size once under DP attention
    num_sms: int
    buckets: List[Tuple[int, int, int]] = field(default_factory=list)  # (num_splits, min_tokens, max_tokens)
    representatives: List[int] = field(default_factory=list)  # one token count per bucket, as prewarm runs them
    keys: List[str] = field(default_factory=list)     # the JIT keys prewarm builds (Context.planned_keys)
    defaults: List[str] = field(default_factory=list)  # "field=value" for config fields left out
    skipped: str = ""  # why prewarm would plan no mHC keys (HCWARM_MHC_PREWARM=0, a generic variant); "" otherwise

    def as_dict(self) -> dict:
        return asdict(self)


def plan(config: Any, *, chunked_prefill_size: Optional[int] = None, dp_size: int = 1,
         enable_dp_attention: bool = False, num_sms: Optional[int] = None, device: Any = None,
         fused_norm: Optional[bool] = True) -> Plan:
    """The plan prewarm(config, ...) would follow on `device`: its max_num_tokens, SM count,
    split buckets, representative token counts and exact JIT keys, and the config defaults used.
    Builds nothing. On a device whose context exists (an op or prewarm ran there) the plan is that
    context's, and a num_sms other than its own raises ValueError; otherwise it is the plan of the
    context a first prewarm(..., num_sms=num_sms) would create. Arguments as prewarm()'s."""
    args = request_args(config, chunked_prefill_size, dp_size, enable_dp_attention, fused_norm)
    sms = _num_sms_arg(num_sms)
    kind, index = parse_device(device)
    ctx = existing_contexts().get((kind, index))
    if ctx is None:
        ctx = _core.Context(backend=kind, device=index, **({} if sms is None else {"num_sms": sms}))
    elif sms is not None and sms != ctx.num_sms:
        raise ValueError(f"num_sms: the hcwarm context of {kind}:{index} plans with {ctx.num_sms} SMs, not {sms}; "
                         "settings are fixed by the first call on a device")
    d = ctx.plan(*args)
    d["buckets"] = [tuple(b) for b in d["buckets"]]
    return Plan(device=f"{kind}:{index}", **d)
