"""Engine-shaped arguments to hcwarm's: the checks name the engine's argument, never hcwarm's.

Both engines pass the mHC constants one by one (rms_eps, hc_pre_eps, hc_sinkhorn_eps,
hc_post_mult_value, sinkhorn_repeat, norm_eps) and tensors with any leading shape
(..., hc, D). hcwarm takes one hc_eps and (T, hc, D) rows; this module maps the first onto
the second with views only, and refuses what it cannot map.
"""
from __future__ import annotations

import math
import operator
from typing import Any, Dict, Tuple

from .._core import InvalidArgumentError


class EngineArgumentError(InvalidArgumentError):
    """An engine-shaped argument hcwarm cannot honour (a ValueError); the message names the argument."""


def real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name}: expected a float, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise EngineArgumentError(f"{name}: expected a finite float, got {value}")
    return value


def one_eps(hc_pre_eps: Any, hc_sinkhorn_eps: Any) -> float:
    """hcwarm's single hc_eps: the engines' two epsilons, which must then be equal."""
    pre, sinkhorn = real("hc_pre_eps", hc_pre_eps), real("hc_sinkhorn_eps", hc_sinkhorn_eps)
    if pre != sinkhorn:
        raise EngineArgumentError(
            f"hc_pre_eps ({pre!r}) != hc_sinkhorn_eps ({sinkhorn!r}): hcwarm uses one epsilon (hc_eps) for the "
            "pre gates and for the Sinkhorn normalisation; pass equal values (DeepSeek V4 uses hc_eps for both)")
    return pre


def pre_constants(rms_eps: Any, hc_pre_eps: Any, hc_sinkhorn_eps: Any, hc_post_mult_value: Any, sinkhorn_repeat: Any,
                  norm_weight: Any, norm_eps: Any) -> Dict[str, Any]:
    """hcwarm.hc_pre's keyword constants from the engines' positional ones (in the engines' order)."""
    try:
        iters = operator.index(sinkhorn_repeat)
    except TypeError:
        raise TypeError(f"sinkhorn_repeat: expected an int, got {type(sinkhorn_repeat).__name__}") from None
    if isinstance(sinkhorn_repeat, bool) or iters < 1:
        raise EngineArgumentError(f"sinkhorn_repeat: expected an int >= 1, got {sinkhorn_repeat!r}")
    rms = real("rms_eps", rms_eps)
    # without a norm weight norm_eps is unused: rms_eps keeps the call on the kernels prewarm loaded
    return {"sinkhorn_iters": int(iters), "hc_eps": one_eps(hc_pre_eps, hc_sinkhorn_eps), "rms_eps": rms,
            "norm_eps": rms if norm_weight is None else real("norm_eps", norm_eps),
            "post_mult": real("hc_post_mult_value", hc_post_mult_value)}


def streams(name: str, x: Any) -> Tuple[Tuple[int, ...], int, int]:
    """(leading shape, hc, D) of an (..., hc, D) tensor."""
    shape = tuple(int(d) for d in x.shape)
    if len(shape) < 2:
        raise EngineArgumentError(f"{name}: expected shape (..., hc, D), got {shape}")
    return shape[:-2], shape[-2], shape[-1]


def rows(name: str, x: Any, lead: Tuple[int, ...], tail: Tuple[int, ...]) -> Any:
    """x, of shape lead + tail, viewed as (T, *tail): a view, never a copy (hcwarm reads it in place)."""
    shape = tuple(int(d) for d in x.shape)
    if shape != lead + tail:
        raise EngineArgumentError(f"{name}: expected shape {lead + tail}, got {shape}")
    if not x.is_contiguous():
        raise EngineArgumentError(f"{name}: expected a contiguous tensor (hcwarm reads its rows in place), got shape "
                                  f"{shape} with strides {tuple(x.stride())}")
    return x.view(math.prod(lead), *tail)


def post_rows(name: str, post: Any, lead: Tuple[int, ...], hc: int) -> Any:
    """The previous pre step's post mix, (..., hc, 1) as the engines return it or (..., hc), as (T, hc)."""
    tail = (hc, 1) if tuple(post.shape) == lead + (hc, 1) else (hc,)
    return rows(name, post, lead, tail).view(math.prod(lead), hc)


def norm_weight_like_engine(norm_weight: Any) -> Any:
    """The sublayer norm weight as both engines hand it to their kernels: bf16 and contiguous (they
    convert and copy a weight that is neither, so the adapters do the same)."""
    if norm_weight is None:
        return None
    import torch

    if norm_weight.dtype != torch.bfloat16:
        norm_weight = norm_weight.to(torch.bfloat16)
    return norm_weight if norm_weight.is_contiguous() else norm_weight.contiguous()
