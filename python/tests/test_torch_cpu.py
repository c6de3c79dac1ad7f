"""The torch ops on CPU tensors (CPU backend): needs PyTorch, not a GPU."""
import numpy as np
import pytest

import hcwarm
from numerics import compare

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
