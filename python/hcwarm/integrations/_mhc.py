"""The mHC steps in the engines' shapes, on hcwarm's ops (shared by the SGLang and vLLM adapters).

Both engines return post mixes as (..., hc, 1) f32, comb mixes as (..., hc, hc) f32 and layer
inputs as (..., D) bf16, with the residual's leading shape; hcwarm's ops take and give (T, ...)
rows. Inputs are flattened with views and outputs reshaped with views: nothing is copied.
"""
from __future__ import annotations

from typing import Any, Dict, Tuple

import hcwarm

from ._args import EngineArgumentError, norm_weight_like_engine, post_rows, real, rows, streams


def pre(residual: Any, fn: Any, hc_scale: Any, hc_base: Any, norm_weight: Any,
        consts: Dict[str, Any]) -> Tuple[Any, Any, Any]:
    """(post_mix (..., hc, 1), comb_mix (..., hc, hc), layer_input (..., D)) from residual (..., hc, D)."""
    lead, hc, d = streams("residual", residual)
    y, post, comb = hcwarm.hc_pre(rows("residual", residual, lead, (hc, d)), fn, hc_scale, hc_base,
                                  norm_weight_like_engine(norm_weight), **consts)
    return post.view(*lead, hc, 1), comb.view(*lead, hc, hc), y.view(*lead, d)


def pre_broadcast(embedding: Any, fn: Any, hc_scale: Any, hc_base: Any, norm_weight: Any,
                  consts: Dict[str, Any]) -> Tuple[Any, Any, Any, Any]:
    """The first layer from the token embedding (T, D): (streams (T, hc, D), post_mix (T, hc, 1),
    comb_mix (T, hc, hc), layer_input (T, D)); streams are the hc copies the next post step reads."""
    shape = tuple(int(s) for s in embedding.shape)
    if len(shape) != 2:
        raise EngineArgumentError(f"residual: expected the token embedding (T, D), got shape {shape}")
    emb = rows("residual", embedding, shape[:1], shape[1:])
    y, post, comb = hcwarm.hc_pre(emb, fn, hc_scale, hc_base, norm_weight_like_engine(norm_weight), **consts)
    t, hc = post.shape
    return emb.unsqueeze(1).expand(t, hc, shape[1]).contiguous(), post.view(t, hc, 1), comb, y


def post(x: Any, residual: Any, post_layer_mix: Any, comb_res_mix: Any) -> Any:
    """The post step: new residual streams with residual's shape (..., hc, D)."""
    lead, hc, d = streams("residual", residual)
    out = hcwarm.hc_post(rows("x", x, lead, (d,)), rows("residual", residual, lead, (hc, d)),
                         post_rows("post_layer_mix", post_layer_mix, lead, hc),
                         rows("comb_res_mix", comb_res_mix, lead, (hc, hc)))
    return out.view(residual.shape)


def post_pre(x: Any, residual: Any, post_layer_mix: Any, comb_res_mix: Any, fn: Any, hc_scale: Any, hc_base: Any,
             norm_weight: Any, consts: Dict[str, Any]) -> Tuple[Any, Any, Any, Any]:
    """The sublayer boundary: (residual_cur (..., hc, D), post_mix_cur (..., hc, 1), comb_mix_cur
    (..., hc, hc), layer_input_cur (..., D)), the engines' order."""
    lead, hc, d = streams("residual", residual)
    new, y, post_mix, comb = hcwarm.hc_post_pre(
        rows("x", x, lead, (d,)), rows("residual", residual, lead, (hc, d)),
        post_rows("post_layer_mix", post_layer_mix, lead, hc), rows("comb_res_mix", comb_res_mix, lead, (hc, hc)),
        fn, hc_scale, hc_base, norm_weight_like_engine(norm_weight), **consts)
    return new.view(residual.shape), post_mix.view(*lead, hc, 1), comb.view(*lead, hc, hc), y.view(*lead, d)


def head(name: str, x: Any, fn: Any, hc_scale: Any, hc_base: Any, rms_eps: Tuple[str, Any],
         hc_eps: Tuple[str, Any]) -> Any:
    """The mHC head: (..., D) from x (..., hc, D). The epsilons come as (engine name, value)."""
    lead, hc, d = streams(name, x)
    y = hcwarm.hc_head(rows(name, x, lead, (hc, d)), fn, hc_scale, hc_base, hc_eps=real(*hc_eps),
                       rms_eps=real(*rms_eps))
    return y.view(*lead, d)
