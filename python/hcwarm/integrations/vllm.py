"""vLLM's mHC entry points, with vLLM's signatures, backed by hcwarm's ops.

Read from vLLM's sources (vllm/model_executor/kernels/mhc/tilelang.py, registered there as
torch.ops.vllm.*; the CustomOp classes of vllm/model_executor/layers/mhc.py;
vllm/model_executor/warmup/deepseek_v4_mhc_warmup.py; vllm/model_executor/models/deepseek_v4.py):

- ``mhc_pre_tilelang(residual, fn, hc_scale, hc_base, rms_eps, hc_pre_eps, hc_sinkhorn_eps,
  hc_post_mult_value, sinkhorn_repeat, n_splits=1, norm_weight=None, norm_eps=1e-6)
  -> (post_mix (..., hc, 1) f32, comb_mix (..., hc, hc) f32, layer_input (..., D) bf16)``;
  residual (..., hc, D) bf16 flattened with ``view``; a norm weight that is not bf16 or not
  contiguous is converted / copied, there and here.
- ``mhc_pre_broadcast_tilelang(residual, fn, hc_scale, hc_base, rms_eps, hc_pre_eps,
  hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat, n_splits=1, norm_weight=None,
  norm_eps=1e-6, fn_broadcast=None) -> (residual_out (T, hc, D), post_mix (T, hc, 1), comb_mix
  (T, hc, hc), layer_input (T, D))``: the first layer from the token embedding residual (T, D).
  vLLM needs fn_broadcast (fn summed over the streams) and a norm weight; hcwarm reads fn itself,
  so fn_broadcast is ignored and a missing norm weight is allowed.
- ``mhc_post_tilelang(x, residual, post_layer_mix, comb_res_mix) -> new residual`` (residual's shape).
- ``mhc_fused_post_pre_tilelang(x, residual, post_layer_mix, comb_res_mix, fn, hc_scale, hc_base,
  rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat, n_splits=1, tile_n=1,
  norm_weight=None, norm_eps=1e-6) -> (residual_cur, post_mix_cur, comb_mix_cur, layer_input_cur)``.
- ``hc_head_fused_kernel_tilelang(hs_flat, fn, hc_scale, hc_base, rms_eps, hc_eps) -> (T, D) bf16``.
- Warmup: ``deepseek_v4_mhc_warmup(model, *, max_tokens, cudagraph_capture_sizes=None)`` (called
  from kernel_warmup) and, in later versions, ``register_deepseek_v4_mhc_warmup(model, *,
  vllm_config, include_broadcast, include_head)``, which registers compile keys with the JIT
  warmup registry when ``vllm_config.kernel_config.enable_jit_warmup``. Both find the first
  DeepseekV4DecoderLayer with hc_attn_*/hc_ffn_* parameters, return early for another model type
  or a non-CUDA device, and fuse the norm unless the layer has CustomOp wrappers (``mhc_pre``) or
  says otherwise (``fuse_mhc_rmsnorm``). Here both run hcwarm.prewarm for the layer's (hc, D) and
  the token budget (max_tokens, or the scheduler's max_num_batched_tokens), which warms every
  hc_pre / hc_post / hc_head kernel, broadcast and head included; they return None.

Ignored, documented as such: n_splits, tile_n, fn_broadcast, cudagraph_capture_sizes,
include_broadcast, include_head. Refused with EngineArgumentError (a ValueError) naming the
argument: hc_pre_eps != hc_sinkhorn_eps (hcwarm has one hc_eps), a non-contiguous tensor hcwarm
would have to copy, shapes that do not match residual's.

install() replaces, when vLLM is importable: the functions above in the modules that define or
import them (vllm.* modules only); ``forward_cuda`` of MHCPreOp, MHCPostOp, MHCFusedPostPreOp and
HCHeadOp (keeping each method's own defaults: CustomOp's norm_eps default is 0.0 in some
versions); and the Python attributes ``torch.ops.vllm.<op>`` of the four registered ops, which
the NVIDIA decoder layer calls directly (the registered torch operators themselves are left
alone; ``torch.ops.vllm.<op>.default`` is then unavailable until uninstall()). vLLM binds a
CustomOp's forward at construction, so install() must run before the model is built. A
function or operator whose parameters differ from the adapter's (another vLLM version: older
ones registered hc_head_fused_kernel_tilelang with an out buffer, hidden_size and hc_mult) is
left as it is, with a warning. Inferred, not read: versions whose model binds these functions under other names are not covered;
mhc_pre_delayed_tilelang (a carried pre-mix variant) has no hcwarm counterpart and stays vLLM's.
"""
from __future__ import annotations

import logging
import sys
from typing import Any, Dict, Optional

from . import _mhc
from ._args import EngineArgumentError, pre_constants
from ._patch import Patcher, as_method
from ._warm import prewarm_shape

log = logging.getLogger("hcwarm.integrations")

KERNEL_MODULE = "vllm.model_executor.kernels.mhc.tilelang"
WARMUP_MODULE = "vllm.model_executor.warmup.deepseek_v4_mhc_warmup"
LAYER_MODULE = "vllm.model_executor.layers.mhc"

_patcher = Patcher("vLLM", "vllm")


def mhc_pre_tilelang(residual, fn, hc_scale, hc_base, rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value,
                     sinkhorn_repeat, n_splits=1, norm_weight=None, norm_eps=1e-6):
    """vLLM's mhc_pre on hcwarm.hc_pre: (post_mix (..., hc, 1), comb_mix (..., hc, hc), layer_input
    (..., D)). n_splits is ignored; hc_pre_eps must equal hc_sinkhorn_eps."""
    consts = pre_constants(rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat, norm_weight,
                           norm_eps)
    return _mhc.pre(residual, fn, hc_scale, hc_base, norm_weight, consts)


def mhc_pre_broadcast_tilelang(residual, fn, hc_scale, hc_base, rms_eps, hc_pre_eps, hc_sinkhorn_eps,
                               hc_post_mult_value, sinkhorn_repeat, n_splits=1, norm_weight=None, norm_eps=1e-6,
                               fn_broadcast=None):
    """vLLM's first-layer pre on hcwarm.hc_pre of the embedding residual (T, D): (residual_out (T, hc, D),
    post_mix, comb_mix, layer_input). n_splits and fn_broadcast are ignored."""
    consts = pre_constants(rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat, norm_weight,
                           norm_eps)
    return _mhc.pre_broadcast(residual, fn, hc_scale, hc_base, norm_weight, consts)


def mhc_post_tilelang(x, residual, post_layer_mix, comb_res_mix):
    """vLLM's mhc_post on hcwarm.hc_post: the new residual streams, residual's shape."""
    return _mhc.post(x, residual, post_layer_mix, comb_res_mix)


def mhc_fused_post_pre_tilelang(x, residual, post_layer_mix, comb_res_mix, fn, hc_scale, hc_base, rms_eps,
                                hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat, n_splits=1,
                                tile_n=1, norm_weight=None, norm_eps=1e-6):
    """vLLM's fused post+pre on hcwarm.hc_post_pre: (residual_cur, post_mix_cur, comb_mix_cur,
    layer_input_cur). n_splits and tile_n are ignored; hc_pre_eps must equal hc_sinkhorn_eps."""
    consts = pre_constants(rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat, norm_weight,
                           norm_eps)
    return _mhc.post_pre(x, residual, post_layer_mix, comb_res_mix, fn, hc_scale, hc_base, norm_weight, consts)


def hc_head_fused_kernel_tilelang(hs_flat, fn, hc_scale, hc_base, rms_eps, hc_eps):
    """vLLM's hc_head on hcwarm.hc_head: (..., D) from hs_flat (..., hc, D)."""
    return _mhc.head("hs_flat", hs_flat, fn, hc_scale, hc_base, ("rms_eps", rms_eps), ("hc_eps", hc_eps))


def _first_mhc_layer(model) -> Optional[Any]:
    # vLLM's own rule: the first DeepseekV4DecoderLayer that has both sublayers' mHC parameters
    for module in model.modules():
        if type(module).__name__ == "DeepseekV4DecoderLayer" and all(
                hasattr(module, f"hc_{p}_{w}") for p in ("attn", "ffn") for w in ("fn", "scale", "base")):
            return module
    return None


def _prewarm_model(model, max_tokens) -> None:
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    if model_type is not None and model_type != "deepseek_v4":
        return
    layer = _first_mhc_layer(model)
    if layer is None or layer.hc_attn_fn.device.type != "cuda" or max_tokens <= 0:
        return
    hc_eps = getattr(layer, "hc_eps", 1e-6)
    norm = getattr(layer, "attn_norm", None)
    rms_eps = getattr(layer, "rms_norm_eps", 1e-6)
    consts = pre_constants(rms_eps, hc_eps, hc_eps, getattr(layer, "hc_post_alpha", 2.0),
                           getattr(layer, "hc_sinkhorn_iters", 20), norm, getattr(norm, "variance_epsilon", rms_eps))
    prewarm_shape(hidden_size=layer.hidden_size, hc_mult=layer.hc_mult, max_tokens=max_tokens,
                  device=layer.hc_attn_fn.device, consts=consts,
                  fused_norm=bool(getattr(layer, "fuse_mhc_rmsnorm", not hasattr(layer, "mhc_pre"))))


def deepseek_v4_mhc_warmup(model, *, max_tokens, cudagraph_capture_sizes=None):
    """vLLM's mHC warmup as hcwarm.prewarm for T in [1, max_tokens] (every split bucket, not a list
    of sizes: cudagraph_capture_sizes is ignored). Returns None."""
    _prewarm_model(model, int(max_tokens))


def register_deepseek_v4_mhc_warmup(model, *, vllm_config, include_broadcast, include_head):
    """vLLM's warmup registration as an immediate hcwarm.prewarm for the scheduler's
    max_num_batched_tokens, when vllm_config enables JIT warmup; hcwarm warms the broadcast pre and
    the head anyway (include_broadcast and include_head are ignored). Returns None."""
    if not vllm_config.kernel_config.enable_jit_warmup:
        return
    _prewarm_model(model, int(vllm_config.scheduler_config.max_num_batched_tokens))


KERNELS = {f.__name__: f for f in (mhc_pre_tilelang, mhc_pre_broadcast_tilelang, mhc_post_tilelang,
                                   mhc_fused_post_pre_tilelang, hc_head_fused_kernel_tilelang)}
WARMUPS = {f.__name__: f for f in (deepseek_v4_mhc_warmup, register_deepseek_v4_mhc_warmup)}
CUSTOM_OPS = {"MHCPreOp": mhc_pre_tilelang, "MHCPostOp": mhc_post_tilelang,
              "MHCFusedPostPreOp": mhc_fused_post_pre_tilelang, "HCHeadOp": hc_head_fused_kernel_tilelang}
TORCH_OPS = ("mhc_pre_tilelang", "mhc_post_tilelang", "mhc_fused_post_pre_tilelang", "hc_head_fused_kernel_tilelang")


def _replace_custom_ops(module) -> None:
    for cls_name, adapter in CUSTOM_OPS.items():
        cls = getattr(module, cls_name, None)
        key = f"{module.__name__}.{cls_name}.forward_cuda"
        original = _patcher.original(key, cls, "forward_cuda") if isinstance(cls, type) else None
        if original is None:
            continue
        method = as_method(adapter, original)
        if method is None:
            log.warning("hcwarm.integrations: %s has an unexpected signature; left as it is", key)
        else:
            _patcher.replace(key, cls, "forward_cuda", method)


def _replace_torch_ops() -> None:
    torch = sys.modules.get("torch")  # vLLM imported it; without it there is nothing registered
    if torch is None:
        return
    namespace = torch.ops.vllm
    for name in TORCH_OPS:
        try:
            getattr(namespace, name)  # resolves (and caches) the registered operator
        except (AttributeError, RuntimeError):
            continue
        _patcher.replace(f"torch.ops.vllm.{name}", namespace, name, KERNELS[name])


def install() -> Dict[str, Any]:
    """Replaces vLLM's mHC functions, CustomOp forwards and torch.ops.vllm attributes with these
    adapters; returns {"owner.attr": vLLM's object} for everything replaced (by this call or an
    earlier one). Without vLLM it replaces nothing, warns once and returns {}."""
    if not _patcher.engine_present():
        return _patcher.say_absent("vLLM is not importable")
    originals: Dict[str, list] = {}
    for module in _patcher.import_modules((KERNEL_MODULE, WARMUP_MODULE)):
        for name, adapter in {**KERNELS, **WARMUPS}.items():
            key = f"{module.__name__}.{name}"
            original = _patcher.original(key, module, name)
            if original is not None:
                originals.setdefault(name, []).append(original)
                _patcher.replace(key, module, name, adapter)
    for module in _patcher.import_modules((LAYER_MODULE,)):
        _replace_custom_ops(module)
    if originals:
        _patcher.replace_bound(originals, {**KERNELS, **WARMUPS})
    _replace_torch_ops()
    if not _patcher.mapping():
        return _patcher.say_absent(f"vLLM has none of {KERNEL_MODULE}, {WARMUP_MODULE}, {LAYER_MODULE}")
    return _patcher.mapping()


def uninstall() -> Dict[str, Any]:
    """Puts back every object install() replaced; returns {"owner.attr": restored object}."""
    return _patcher.uninstall()


__all__ = ["mhc_pre_tilelang", "mhc_pre_broadcast_tilelang", "mhc_post_tilelang", "mhc_fused_post_pre_tilelang",
           "hc_head_fused_kernel_tilelang", "deepseek_v4_mhc_warmup", "register_deepseek_v4_mhc_warmup",
           "install", "uninstall", "EngineArgumentError"]
