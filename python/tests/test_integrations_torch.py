"""The engine adapters on torch tensors: every adapter equals hcwarm's own op bit for bit after
reshaping, for leading shapes (T,) and (2, 3); the pre path also against the float64 reference.
CPU tensors here; the gpu-marked tests repeat it on CUDA at the DeepSeek V4 hidden sizes.
"""
import pytest

import hcwarm
import hcwarm.integrations.sglang as hc_sglang
import hcwarm.integrations.vllm as hc_vllm
from hcwarm.integrations import EngineArgumentError
from numerics import compare

torch = pytest.importorskip("torch")

HC, EPS, ITERS, POST_MULT = 4, 1e-6, 20, 2.0
LEADS = [(1,), (5,), (2, 3), (0,)]


def params(d, device, seed):
    """fn, scale, base, norm weight and head parameters: the C++ tests' distribution."""
    g = torch.Generator().manual_seed(seed)
    mix = HC * (2 + HC)
    pre = (torch.randn(mix, HC * d, generator=g) * 1e-3, torch.randn(3, generator=g) * 0.1,
           torch.randn(mix, generator=g) * 0.1, (1 + 0.1 * torch.randn(d, generator=g)).to(torch.bfloat16))
    head = (torch.randn(HC, HC * d, generator=g) * 1e-3, torch.randn(1, generator=g) * 0.1,
            torch.randn(HC, generator=g) * 0.1)
    return [x.to(device) for x in pre], [x.to(device) for x in head]


def state(lead, d, device, seed):
    """residual (*lead, hc, D) bf16, a sublayer output x (*lead, D) and previous post / comb mixes."""
    g = torch.Generator().manual_seed(seed)
    residual = torch.randn(*lead, HC, d, generator=g).to(torch.bfloat16)
    x = torch.randn(*lead, d, generator=g).to(torch.bfloat16)
    post = torch.rand(*lead, HC, 1, generator=g) * 2
    comb = torch.rand(*lead, HC, HC, generator=g)
    return [t.to(device) for t in (residual, x, post, comb)]


def engine_pre(engine, residual, fn, scale, base, w):
    if engine == "sglang":
        return hc_sglang.mhc_pre(residual, fn, scale, base, EPS, EPS, EPS, POST_MULT, ITERS, norm_weight=w, norm_eps=EPS)
    return hc_vllm.mhc_pre_tilelang(residual, fn, scale, base, EPS, EPS, EPS, POST_MULT, ITERS, 1, w, EPS)


def engine_post_pre(engine, x, residual, post, comb, fn, scale, base, w):
    args = (x, residual, post, comb, fn, scale, base, EPS, EPS, EPS, POST_MULT, ITERS)
    if engine == "sglang":
        return hc_sglang.mhc_fused_post_pre(*args, norm_weight=w, norm_eps=EPS)
    return hc_vllm.mhc_fused_post_pre_tilelang(*args, 1, 1, w, EPS)


def engine_post(engine, *args):
    return (hc_sglang.mhc_post if engine == "sglang" else hc_vllm.mhc_post_tilelang)(*args)


def engine_head(engine, x, fn, scale, base):
    if engine == "sglang":
        return hc_sglang.fused_hc_head(x, fn, scale, base, EPS, EPS)
    return hc_vllm.hc_head_fused_kernel_tilelang(x, fn, scale, base, EPS, EPS)


def rows(t, *tail):
    return t.reshape(-1, *tail)


def check_family(engine, lead, d, device, seed, reference):
    """Every adapter against hcwarm's op on the same (T, ...) rows: equal bit for bit, shaped as the engine's."""
    (fn, scale, base, w), head = params(d, device, seed)
    residual, x, prev_post, prev_comb = state(lead, d, device, seed + 1)
    for norm in (w, None):
        post, comb, y = engine_pre(engine, residual, fn, scale, base, norm)
        assert post.shape == (*lead, HC, 1) and comb.shape == (*lead, HC, HC) and y.shape == (*lead, d)
        assert post.dtype == comb.dtype == torch.float32 and y.dtype == torch.bfloat16
        want = hcwarm.hc_pre(rows(residual, HC, d), fn, scale, base, norm)
        assert torch.equal(rows(y, d), want[0]) and torch.equal(rows(post, HC), want[1])
        assert torch.equal(rows(comb, HC, HC), want[2])
        if reference and norm is not None and y.numel():
            compare(rows(y, d).float().cpu().numpy(), rows(post, HC).cpu().numpy(), rows(comb, HC, HC).cpu().numpy(),
                    rows(residual, HC, d).float().cpu().numpy(), *[t.float().cpu().numpy() for t in (fn, scale, base)],
                    w.float().cpu().numpy())

    new = engine_post(engine, x, residual, prev_post, prev_comb)
    assert new.shape == residual.shape and new.dtype == torch.bfloat16
    want = hcwarm.hc_post(rows(x, d), rows(residual, HC, d), rows(prev_post, HC), rows(prev_comb, HC, HC))
    assert torch.equal(rows(new, HC, d), want)
    assert torch.equal(engine_post(engine, x, residual, prev_post.squeeze(-1), prev_comb), new)  # post as (..., hc)

    got = engine_post_pre(engine, x, residual, prev_post, prev_comb, fn, scale, base, w)
    assert [t.shape for t in got] == [residual.shape, (*lead, HC, 1), (*lead, HC, HC), (*lead, d)]
    want = hcwarm.hc_post_pre(rows(x, d), rows(residual, HC, d), rows(prev_post, HC), rows(prev_comb, HC, HC),
                              fn, scale, base, w)
    assert torch.equal(rows(got[0], HC, d), want[0]) and torch.equal(rows(got[3], d), want[1])
    assert torch.equal(rows(got[1], HC), want[2]) and torch.equal(rows(got[2], HC, HC), want[3])

    out = engine_head(engine, residual, *head)
    assert out.shape == (*lead, d) and out.dtype == torch.bfloat16
    assert torch.equal(rows(out, d), hcwarm.hc_head(rows(residual, HC, d), *head))


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
@pytest.mark.parametrize("lead", LEADS)
def test_adapters_equal_hcwarm_ops_on_cpu(engine, lead):
    check_family(engine, lead, 256, "cpu", seed=len(lead) * 10 + lead[0], reference=True)


def test_vllm_broadcast_pre_is_hc_pre_on_the_embedding():
    (fn, scale, base, w), _ = params(256, "cpu", 7)
    emb = torch.randn(5, 256, generator=torch.Generator().manual_seed(8)).to(torch.bfloat16)
    streams, post, comb, y = hc_vllm.mhc_pre_broadcast_tilelang(emb, fn, scale, base, EPS, EPS, EPS, POST_MULT, ITERS,
                                                                norm_weight=w, norm_eps=EPS, fn_broadcast=None)
    want = hcwarm.hc_pre(emb, fn, scale, base, w)
    assert streams.shape == (5, HC, 256) and torch.equal(streams, emb.unsqueeze(1).expand(5, HC, 256))
    assert torch.equal(y, want[0]) and torch.equal(post, want[1].unsqueeze(-1)) and torch.equal(comb, want[2])
    # the pre step of the hc streams it stands for, within the reference's tolerances
    compare(y.float().numpy(), post.squeeze(-1).numpy(), comb.numpy(), streams.float().numpy(), fn.numpy(),
            scale.numpy(), base.numpy(), w.float().numpy())


def test_norm_weight_is_converted_as_the_engines_do():
    (fn, scale, base, w), _ = params(256, "cpu", 11)
    residual = state((3,), 256, "cpu", 12)[0]
    want = hc_sglang.mhc_pre(residual, fn, scale, base, EPS, EPS, EPS, POST_MULT, ITERS, norm_weight=w, norm_eps=EPS)
    strided = torch.stack([w.float(), w.float()], dim=1)[:, 0]  # f32 and not contiguous: converted, copied
    got = hc_sglang.mhc_pre(residual, fn, scale, base, EPS, EPS, EPS, POST_MULT, ITERS, norm_weight=strided,
                            norm_eps=EPS)
    assert all(torch.equal(a, b) for a, b in zip(got, want))


def test_refusals_name_the_argument():
    (fn, scale, base, w), _ = params(256, "cpu", 13)
    residual, x, post, comb = state((2, 3), 256, "cpu", 14)
    with pytest.raises(EngineArgumentError, match="hc_pre_eps .* != hc_sinkhorn_eps"):
        hc_sglang.mhc_pre(residual, fn, scale, base, EPS, EPS, 2 * EPS, POST_MULT, ITERS)
    with pytest.raises(EngineArgumentError, match="hc_pre_eps .* != hc_sinkhorn_eps"):
        hc_vllm.mhc_pre_tilelang(residual, fn, scale, base, EPS, 1e-5, EPS, POST_MULT, ITERS)
    with pytest.raises(EngineArgumentError, match="residual: expected a contiguous"):
        hc_vllm.mhc_pre_tilelang(residual.transpose(0, 1), fn, scale, base, EPS, EPS, EPS, POST_MULT, ITERS)
    with pytest.raises(EngineArgumentError, match="x: expected shape"):
        hc_sglang.mhc_post(x[:1], residual, post, comb)
    with pytest.raises(EngineArgumentError, match="comb_res_mix: expected shape"):
        hc_vllm.mhc_post_tilelang(x, residual, post, comb[..., :2])
    with pytest.raises(EngineArgumentError, match="residual: expected the token embedding"):
        hc_vllm.mhc_pre_broadcast_tilelang(residual, fn, scale, base, EPS, EPS, EPS, POST_MULT, ITERS)
    with pytest.raises(EngineArgumentError, match="hs_flat: expected shape"):
        hc_vllm.hc_head_fused_kernel_tilelang(x[0, 0], *params(256, "cpu", 15)[1], EPS, EPS)


def test_vllm_torch_ops_attribute_is_replaced_and_restored(monkeypatch):
    """The NVIDIA decoder layer calls torch.ops.vllm.<op> directly: install() points that attribute
    at the adapter (a stand-in op registered here; vLLM itself is a stand-in package)."""
    import sys
    import types

    if "vllm" not in sys.modules:
        monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))
    lib = torch.library.Library("vllm", "FRAGMENT")  # noqa: TOR901 - a test-only stand-in
    try:
        lib.define("mhc_post_tilelang(Tensor x, Tensor residual, Tensor post_layer_mix, Tensor comb_res_mix) -> Tensor")
    except RuntimeError:
        pytest.skip("vllm::mhc_post_tilelang is already registered in this process")
    lib.impl("mhc_post_tilelang", lambda x, r, p, c: r.clone(), "CPU")
    original = torch.ops.vllm.mhc_post_tilelang
    try:
        replaced = hc_vllm.install()
        assert replaced["torch.ops.vllm.mhc_post_tilelang"] is original
        assert torch.ops.vllm.mhc_post_tilelang is hc_vllm.mhc_post_tilelang
        residual, x, post, comb = state((4,), 256, "cpu", 16)
        assert torch.equal(torch.ops.vllm.mhc_post_tilelang(x, residual, post, comb),
                           hc_vllm.mhc_post_tilelang(x, residual, post, comb))
    finally:
        restored = hc_vllm.uninstall()
    assert restored["torch.ops.vllm.mhc_post_tilelang"] is original
    assert torch.ops.vllm.mhc_post_tilelang is original


@pytest.mark.gpu
@pytest.mark.parametrize("engine", ["sglang", "vllm"])
@pytest.mark.parametrize("d", [4096, 7168])
@pytest.mark.parametrize("lead", [(1,), (2, 3), (64,)])
def test_adapters_equal_hcwarm_ops_on_gpu(engine, d, lead):
    check_family(engine, lead, d, "cuda:0", seed=d + lead[0], reference=lead == (2, 3))
