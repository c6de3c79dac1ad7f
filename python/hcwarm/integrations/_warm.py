"""hcwarm.prewarm from what an engine's warmup hook knows: the mHC shape, the constants, a token budget."""
from __future__ import annotations

import logging
from typing import Any, Dict

import hcwarm

log = logging.getLogger("hcwarm.integrations")

DEFAULT_POST_MULT = 2.0  # what hcwarm.prewarm warms (a config.json has no field for it)


def prewarm_shape(*, hidden_size: int, hc_mult: int, max_tokens: int, device: Any, consts: Dict[str, Any],
                  fused_norm: bool) -> Any:
    """hcwarm.prewarm for T in [1, max_tokens] of one mHC shape; returns its PrewarmReport."""
    config = {"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": int(hidden_size), "hc_mult": int(hc_mult),
              "num_hidden_layers": 1, "hc_sinkhorn_iters": consts["sinkhorn_iters"], "hc_eps": consts["hc_eps"],
              "rms_norm_eps": consts["rms_eps"],
              # the engine's hook already chose to warm: hcwarm's hybrid-attention gate must not veto it
              "sliding_window": 128}
    if consts["norm_eps"] != consts["rms_eps"] or consts["post_mult"] != DEFAULT_POST_MULT:
        log.warning("hcwarm.integrations: prewarm warms norm_eps = rms_eps and post_mult %s; calls with "
                    "norm_eps %s, post_mult %s compile on first use", DEFAULT_POST_MULT, consts["norm_eps"],
                    consts["post_mult"])
    report = hcwarm.prewarm(config, chunked_prefill_size=int(max_tokens), device=device, fused_norm=fused_norm)
    log.info("hcwarm: mHC prewarm (hidden %d, hc %d, %d tokens): %d kernels (%d compiled, %d from disk) in %.2fs%s",
             hidden_size, hc_mult, report.max_num_tokens, report.keys, report.compiled, report.loaded_from_disk,
             report.seconds, f"; skipped: {report.skipped}" if report.skipped else "")
    return report
