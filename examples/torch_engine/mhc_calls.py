"""The model's mHC calls, made one of three ways.

Direct (the default): hcwarm's ops, with the residual updated in place. ViaSGLang / ViaVLLM
(--via sglang | vllm): the engine-shaped adapters of hcwarm.integrations, called the way that
engine's DeepSeek V4 model calls its own functions, with its argument order and return order;
each boundary then gets fresh output buffers, as the engines' functions allocate them.

Each object has first (the first layer, from the token embedding), boundary (post step of one
sublayer and pre step of the next), last (post step of the last sublayer) and head; the first
three return (residual, y, post, comb) or the residual.
"""
import hcwarm
from hcwarm.integrations import sglang as sg
from hcwarm.integrations import vllm as vl


class Direct:
    def __init__(self, hc, kw):
        self.hc, self.kw = hc, kw

    def first(self, emb, fn, scale, base, norm_w):
        # hc_pre reads the embedding (T, D) itself; the post step after it needs the streams
        y, post, comb = hcwarm.hc_pre(emb, fn, scale, base, norm_w, **self.kw)
        return emb.unsqueeze(1).expand(-1, self.hc, -1).contiguous(), y, post, comb

    def boundary(self, x, residual, post, comb, fn, scale, base, norm_w):
        # one call per boundary: this sublayer's post step, in place, then the next one's pre step
        return hcwarm.hc_post_pre(x, residual, post, comb, fn, scale, base, norm_w, new_residual=residual, **self.kw)

    def last(self, x, residual, post, comb):
        return hcwarm.hc_post(x, residual, post, comb, out=residual)

    def head(self, residual, fn, scale, base):
        return hcwarm.hc_head(residual, fn, scale, base, hc_eps=self.kw["hc_eps"], rms_eps=self.kw["rms_eps"])


class _Engine(Direct):
    def consts(self):
        """The positional constants both engines pass: rms_eps, hc_pre_eps, hc_sinkhorn_eps, post mult, iterations."""
        kw = self.kw
        return kw["rms_eps"], kw["hc_eps"], kw["hc_eps"], hcwarm.POST_MULT, kw["sinkhorn_iters"]


class ViaSGLang(_Engine):
    def first(self, emb, fn, scale, base, norm_w):
        # SGLang has no first-layer broadcast entry: its model repeats the embedding into the streams
        residual = emb.unsqueeze(1).repeat(1, self.hc, 1)
        post, comb, y = sg.mhc_pre(residual, fn, scale, base, *self.consts(), norm_weight=norm_w,
                                   norm_eps=self.kw["norm_eps"])
        return residual, y, post, comb

    def boundary(self, x, residual, post, comb, fn, scale, base, norm_w):
        residual, post, comb, y = sg.mhc_fused_post_pre(x, residual, post, comb, fn, scale, base, *self.consts(),
                                                        norm_weight=norm_w, norm_eps=self.kw["norm_eps"])
        return residual, y, post, comb

    def last(self, x, residual, post, comb):
        return sg.mhc_post(x, residual, post, comb)

    def head(self, residual, fn, scale, base):
        return sg.fused_hc_head(residual, fn, scale, base, self.kw["rms_eps"], self.kw["hc_eps"])


class ViaVLLM(_Engine):
    def first(self, emb, fn, scale, base, norm_w):
        residual, post, comb, y = vl.mhc_pre_broadcast_tilelang(emb, fn, scale, base, *self.consts(), 1, norm_w,
                                                                self.kw["norm_eps"])
        return residual, y, post, comb

    def boundary(self, x, residual, post, comb, fn, scale, base, norm_w):
        residual, post, comb, y = vl.mhc_fused_post_pre_tilelang(x, residual, post, comb, fn, scale, base,
                                                                 *self.consts(), 1, 1, norm_w, self.kw["norm_eps"])
        return residual, y, post, comb

    def last(self, x, residual, post, comb):
        return vl.mhc_post_tilelang(x, residual, post, comb)

    def head(self, residual, fn, scale, base):
        return vl.hc_head_fused_kernel_tilelang(residual, fn, scale, base, self.kw["rms_eps"], self.kw["hc_eps"])


VIA = {None: Direct, "sglang": ViaSGLang, "vllm": ViaVLLM}
