"""The torch ops on CPU tensors (CPU backend): needs PyTorch, not a GPU."""
import numpy as np
import pytest

import hcwarm
from numerics import compare, compare_head, compare_post

torch = pytest.importorskip("torch")


def test_cpu_tensors_match_reference_and_numpy():
    g = torch.Generator().manual_seed(0)
    t, hc, d = 9, 4, 256
    residual = torch.randn(t, hc, d, generator=g).to(torch.bfloat16)
    fn = torch.randn(24, hc * d, generator=g) * 0.05
    scale = torch.rand(3, generator=g) + 0.2
    base = torch.randn(24, generator=g) * 0.2
    w = (1 + 0.1 * torch.randn(d, generator=g)).to(torch.bfloat16)
    y, post, comb = hcwarm.hc_pre(residual, fn, scale, base, w)
    args_np = [x.float().numpy() for x in (residual, fn, scale, base, w)]
    compare(y.float().numpy(), post.numpy(), comb.numpy(), *args_np)
    y_np, _, _ = hcwarm.hc_pre(*args_np)
    assert np.array_equal(y.float().numpy(), y_np)
    out = hcwarm.hc_post(y, residual, post, comb)
    assert out.shape == (t, hc, d) and out.dtype == torch.bfloat16


def test_cpu_custom_op_is_registered_with_a_fake():
    assert hasattr(torch.ops.hcwarm, "hc_pre") and hasattr(torch.ops.hcwarm, "hc_post_out")
    with torch._subclasses.fake_tensor.FakeTensorMode():
        r = torch.empty(5, 4, 256, dtype=torch.bfloat16)
        y, post, comb = torch.ops.hcwarm.hc_pre(r, torch.empty(24, 1024), torch.empty(3), torch.empty(24), None,
                                                20, 1e-6, 1e-6, 1e-6, 2.0)
        assert y.shape == (5, 256) and comb.shape == (5, 4, 4)


def test_cpu_tensors_run_the_family_as_the_numpy_path():
    g = torch.Generator().manual_seed(1)
    t, hc, d = 7, 4, 256
    embed = torch.randn(t, d, generator=g).to(torch.bfloat16)
    fn = torch.randn(24, hc * d, generator=g) * 1e-3
    scale = torch.randn(3, generator=g) * 0.1
    base = torch.randn(24, generator=g) * 0.1
    w = (1 + 0.1 * torch.randn(d, generator=g)).to(torch.bfloat16)
    params = (fn, scale, base, w)
    params_np = [v.float().numpy() for v in params]
    # The first layer from the embedding.
    y, post, comb = hcwarm.hc_pre(embed, *params)
    y_np, post_np, comb_np = hcwarm.hc_pre(embed.float().numpy(), *params_np)
    assert np.array_equal(y.float().numpy(), y_np) and np.array_equal(comb.numpy(), comb_np)
    # The boundary, in place.
    residual = embed.unsqueeze(1).expand(-1, hc, -1).contiguous()
    before = residual.clone()
    x = (y.float() * 0.5).to(torch.bfloat16)
    got = hcwarm.hc_post_pre(x, residual, post, comb, *params, new_residual=residual)
    assert got[0] is residual
    compare_post(residual.float().numpy(), x.float().numpy(), before.float().numpy(), post.numpy(), comb.numpy())
    compare(got[1].float().numpy(), got[2].numpy(), got[3].numpy(), residual.float().numpy(), *params_np)
    fresh = hcwarm.hc_post_pre(x, before, post, comb, *params)
    assert torch.equal(fresh[0], residual) and torch.equal(fresh[1], got[1])
    # The head.
    head = (torch.randn(hc, hc * d, generator=g) * 1e-3, torch.randn(1, generator=g) * 0.1,
            torch.randn(hc, generator=g) * 0.1)
    out = hcwarm.hc_head(residual, *head)
    assert out.shape == (t, d) and out.dtype == torch.bfloat16
    compare_head(out.float().numpy(), residual.float().numpy(), *[v.numpy() for v in head])


def test_cpu_family_custom_ops_are_registered_with_fakes():
    for name in ("hc_post_pre", "hc_post_pre_out", "hc_head", "hc_head_out"):
        assert hasattr(torch.ops.hcwarm, name), name
    with torch._subclasses.fake_tensor.FakeTensorMode():
        e = torch.empty(5, 256, dtype=torch.bfloat16)
        y, post, comb = torch.ops.hcwarm.hc_pre(e, torch.empty(24, 1024), torch.empty(3), torch.empty(24), None,
                                                20, 1e-6, 1e-6, 1e-6, 2.0)
        assert y.shape == (5, 256) and post.shape == (5, 4) and comb.shape == (5, 4, 4)
        r = torch.empty(5, 4, 256, dtype=torch.bfloat16)
        new, y, post, comb = torch.ops.hcwarm.hc_post_pre(torch.empty(5, 256, dtype=torch.bfloat16), r,
                                                          torch.empty(5, 4), torch.empty(5, 4, 4),
                                                          torch.empty(24, 1024), torch.empty(3), torch.empty(24),
                                                          None, 20, 1e-6, 1e-6, 1e-6, 2.0)
        assert new.shape == (5, 4, 256) and y.shape == (5, 256) and comb.shape == (5, 4, 4)
        h = torch.ops.hcwarm.hc_head(r, torch.empty(4, 1024), torch.empty(1), torch.empty(4), 1e-6, 1e-6)
        assert h.shape == (5, 256) and h.dtype == torch.bfloat16
