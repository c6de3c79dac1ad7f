"""Drop-in adapters for the serving engines' mHC call sites.

``hcwarm.integrations.sglang`` and ``hcwarm.integrations.vllm`` define functions with each
engine's own names, signatures, defaults, argument shapes and return shapes, run on hcwarm's ops
(hc_pre, hc_post, hc_post_pre, hc_head) and warmup (prewarm). Each has install(), which puts them
in place of the engine's functions in the engine's loaded modules and returns what it replaced,
and uninstall(), which restores exactly that:

    import hcwarm.integrations.sglang as hc_sglang
    replaced = hc_sglang.install()     # {"sglang.kernels.ops.layernorm.mhc.mhc_pre": <SGLang's>, ...}
    ...
    hc_sglang.uninstall()

Both import without PyTorch, and neither imports the engine before install(); without the
engine, install() warns once and returns {}. An argument hcwarm cannot honour (hc_pre_eps != hc_sinkhorn_eps, a
non-contiguous tensor) raises EngineArgumentError, a ValueError naming the argument.
"""
from ._args import EngineArgumentError

__all__ = ["EngineArgumentError", "sglang", "vllm"]
