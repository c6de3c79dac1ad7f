"""SGLang's mHC entry points, with SGLang's signatures, backed by hcwarm's ops.

Read from SGLang's sources (python/sglang/kernels/ops/layernorm/mhc.py and mhc_head.py; the
same functions in the earlier python/sglang/srt/layers/mhc.py and mhc_head.py; the model
python/sglang/srt/models/deepseek_v4.py):

- ``mhc_pre(residual, fn, hc_scale, hc_base, rms_eps, hc_pre_eps, hc_sinkhorn_eps,
  hc_post_mult_value, sinkhorn_repeat, n_splits=1, n_splits_pre=32, *, norm_weight=None,
  norm_eps=None) -> (post_mix, comb_mix, layer_input)``: residual (..., hc, D) bf16, flattened
  with ``view``; outputs shaped with the residual's leading shape: post_mix (..., hc, 1) f32,
  comb_mix (..., hc, hc) f32, layer_input (..., D) bf16. A norm weight without norm_eps is an
  assertion failure there (no default), and refused here; a norm weight that is not bf16 or not
  contiguous is converted / copied there, and here.
- ``mhc_post(x, residual, post_layer_mix, comb_res_mix) -> new residual`` (residual's shape);
  post_layer_mix (..., hc, 1) or (..., hc).
- ``mhc_fused_post_pre(x, residual, post_layer_mix, comb_res_mix, fn, hc_scale, hc_base, rms_eps,
  hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat, n_splits=1, tile_n=1, *,
  norm_weight=None, norm_eps=None) -> (residual_cur, post_mix_cur, comb_mix_cur, layer_input_cur)``.
- ``fused_hc_head(x, hc_fn, hc_scale, hc_base, norm_eps, hc_eps) -> (T, D)``: its norm_eps is
  the RMS epsilon over the hc*D values (hcwarm's rms_eps).
- ``get_mhc_pre_token_count_representatives(max_num_tokens, hc_hidden_size) -> tuple``: one
  token count per split bucket, the largest of its bucket, sorted ascending; () for a budget <= 0
  (SGLang's own test); SGLang takes the SM count of CUDA device 0, and so does this.
- ``prewarm_mhc_pre(residual, fn, hc_scale, hc_base, rms_eps, hc_pre_eps, hc_sinkhorn_eps,
  hc_post_mult_value, sinkhorn_repeat, n_splits, n_splits_pre, norm_weight, norm_eps)``, called
  from weight loading: the budget is ``sglang.srt.runtime_context.get_schedule()``'s
  chunked_prefill_size, or its max_prefill_tokens when chunking is off (None, 0 or -1). Here it
  runs hcwarm.prewarm for residual's (hc, D) on residual's device, which also warms hc_post and
  hc_head; it returns None, as SGLang's does.

Ignored, documented as such: n_splits, n_splits_pre, tile_n (SGLang recomputes or overrides them
on its fast paths; hcwarm picks its own split). Refused with EngineArgumentError (a ValueError)
naming the argument: hc_pre_eps != hc_sinkhorn_eps (hcwarm has one hc_eps), a non-contiguous
tensor that hcwarm would have to copy, shapes that do not match residual's. Accepted beyond
SGLang: mhc_post and fused_hc_head take any leading shape (SGLang's kernels take (T, hc, D)).

install() replaces these names in every loaded ``sglang.*`` module that holds SGLang's function
(its kernel module, the older layers module, and module-level imports such as the model file's).
SGLang's DeepSeek V4 layer calls mhc_pre / mhc_post only with SGLANG_OPT_USE_TILELANG_MHC_PRE /
SGLANG_OPT_USE_TILELANG_MHC_POST set; other paths (the torch fallback, AITER, NPU) stay SGLang's.
The kernel module's own hc_pre / hc_post wrappers (streams flattened to (T, hc*D)) call mhc_pre /
mhc_post through the module's globals, so they reach the adapters too. A function whose parameters
differ from the adapter's (another SGLang version) is left as it is, with a warning.
Inferred, not read: versions whose model binds these functions under another name are not covered.
"""
from __future__ import annotations

import sys
from typing import Any, Dict, Optional

import hcwarm

from . import _mhc
from ._args import EngineArgumentError, pre_constants
from ._patch import Patcher
from ._warm import prewarm_shape

MODULES = ("sglang.kernels.ops.layernorm.mhc", "sglang.srt.layers.mhc")
HEAD_MODULES = ("sglang.kernels.ops.layernorm.mhc_head", "sglang.srt.layers.mhc_head")

_patcher = Patcher("SGLang", "sglang")


def _consts(rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat, norm_weight, norm_eps):
    if norm_weight is not None and norm_eps is None:
        raise EngineArgumentError("norm_eps: required when norm_weight is given (SGLang asserts the same)")
    return pre_constants(rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat, norm_weight,
                         norm_eps)


def mhc_pre(residual, fn, hc_scale, hc_base, rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value,
            sinkhorn_repeat, n_splits=1, n_splits_pre=32, *, norm_weight=None, norm_eps=None):
    """SGLang's mhc_pre on hcwarm.hc_pre: (post_mix (..., hc, 1), comb_mix (..., hc, hc), layer_input
    (..., D)). n_splits and n_splits_pre are ignored; hc_pre_eps must equal hc_sinkhorn_eps."""
    consts = _consts(rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat, norm_weight,
                     norm_eps)
    return _mhc.pre(residual, fn, hc_scale, hc_base, norm_weight, consts)


def mhc_post(x, residual, post_layer_mix, comb_res_mix):
    """SGLang's mhc_post on hcwarm.hc_post: the new residual streams, residual's shape."""
    return _mhc.post(x, residual, post_layer_mix, comb_res_mix)


def mhc_fused_post_pre(x, residual, post_layer_mix, comb_res_mix, fn, hc_scale, hc_base, rms_eps, hc_pre_eps,
                       hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat, n_splits=1, tile_n=1, *,
                       norm_weight=None, norm_eps=None):
    """SGLang's mhc_fused_post_pre on hcwarm.hc_post_pre: (residual_cur, post_mix_cur, comb_mix_cur,
    layer_input_cur). n_splits and tile_n are ignored; hc_pre_eps must equal hc_sinkhorn_eps."""
    consts = _consts(rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat, norm_weight,
                     norm_eps)
    return _mhc.post_pre(x, residual, post_layer_mix, comb_res_mix, fn, hc_scale, hc_base, norm_weight, consts)


def fused_hc_head(x, hc_fn, hc_scale, hc_base, norm_eps, hc_eps):
    """SGLang's fused_hc_head on hcwarm.hc_head: (..., D) from x (..., hc, D); norm_eps is the RMS epsilon."""
    return _mhc.head("x", x, hc_fn, hc_scale, hc_base, ("norm_eps", norm_eps), ("hc_eps", hc_eps))


def _device0_sms() -> Optional[int]:
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None  # hcwarm's own default
    return torch.cuda.get_device_properties(0).multi_processor_count


def get_mhc_pre_token_count_representatives(max_num_tokens, hc_hidden_size):
    """SGLang's bucket representatives from hcwarm.token_count_representatives: a tuple, ascending."""
    if max_num_tokens <= 0:
        return ()
    return tuple(sorted(hcwarm.token_count_representatives(max_num_tokens, hc_hidden_size, num_sms=_device0_sms())))


def _schedule_budget() -> int:
    from sglang.srt.runtime_context import get_schedule

    schedule = get_schedule()
    chunked = getattr(schedule, "chunked_prefill_size", None)
    if chunked is not None and chunked > 0:
        return int(chunked)
    return int(getattr(schedule, "max_prefill_tokens", 0) or 0)


def prewarm_mhc_pre(residual, fn, hc_scale, hc_base, rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value,
                    sinkhorn_repeat, n_splits, n_splits_pre, norm_weight, norm_eps):
    """SGLang's prewarm_mhc_pre as hcwarm.prewarm of residual's (hc, D) for SGLang's token budget, on
    residual's device (fused norm when norm_weight is given). Returns None, as SGLang's does."""
    consts = _consts(rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat, norm_weight,
                     norm_eps)
    budget = _schedule_budget()
    if budget <= 0:
        return None
    hc, hidden = (int(s) for s in residual.shape[-2:])
    prewarm_shape(hidden_size=hidden, hc_mult=hc, max_tokens=budget, device=residual.device, consts=consts,
                  fused_norm=norm_weight is not None)
    return None


ADAPTERS = {f.__name__: f for f in (mhc_pre, mhc_post, mhc_fused_post_pre, get_mhc_pre_token_count_representatives,
                                    prewarm_mhc_pre)}
HEAD_ADAPTERS = {"fused_hc_head": fused_hc_head}


def install() -> Dict[str, Any]:
    """Replaces SGLang's mHC functions with these adapters in every loaded sglang module that holds
    them; returns {"module.attr": SGLang's function} for everything replaced (by this call or an
    earlier one). Without SGLang it replaces nothing, warns once and returns {}."""
    if not _patcher.engine_present():
        return _patcher.say_absent("SGLang is not importable")
    originals: Dict[str, list] = {}
    for modules, adapters in ((MODULES, ADAPTERS), (HEAD_MODULES, HEAD_ADAPTERS)):
        for module in _patcher.import_modules(modules):
            for name, adapter in adapters.items():
                original = _patcher.original(f"{module.__name__}.{name}", module, name)
                if original is not None:
                    originals.setdefault(name, []).append(original)
                    _patcher.replace(f"{module.__name__}.{name}", module, name, adapter)
    if not originals:
        return _patcher.say_absent(f"SGLang has none of {', '.join(MODULES + HEAD_MODULES)}")
    _patcher.replace_bound(originals, {**ADAPTERS, **HEAD_ADAPTERS})
    return _patcher.mapping()


def uninstall() -> Dict[str, Any]:
    """Puts back every function install() replaced; returns {"module.attr": restored function}."""
    return _patcher.uninstall()


__all__ = ["mhc_pre", "mhc_post", "mhc_fused_post_pre", "fused_hc_head", "get_mhc_pre_token_count_representatives",
           "prewarm_mhc_pre", "install", "uninstall", "EngineArgumentError"]

