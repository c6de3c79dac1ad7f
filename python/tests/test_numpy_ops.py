"""hc_pre / hc_post on NumPy arrays (CPU backend) against the float64 reference."""
import numpy as np
import pytest

import hcwarm
from numerics import compare, compare_post, random_inputs
import mhc_reference as ref

HC = 4


@pytest.mark.parametrize("t", [1, 37, 64, 65, 300])
@pytest.mark.parametrize("norm", [True, False])
def test_hc_pre_matches_reference(t, norm):
    rng = np.random.default_rng(1000 + t + norm)
    inputs = random_inputs(rng, t, HC, 256, norm)
    y, post, comb = hcwarm.hc_pre(*inputs)
    assert y.shape == (t, 256) and post.shape == (t, HC) and comb.shape == (t, HC, HC)
    assert y.dtype == post.dtype == comb.dtype == np.float32
    assert np.array_equal(y, ref.bf16_round(y)), "y must hold bf16 values"
    compare(y, post, comb, *inputs)


def test_hc_pre_zero_tokens():
    inputs = random_inputs(np.random.default_rng(5), 0, HC, 256)
    y, post, comb = hcwarm.hc_pre(*inputs)
    assert y.shape == (0, 256) and post.shape == (0, HC) and comb.shape == (0, HC, HC)


def test_hc_pre_out_buffers_are_written_and_returned():
    rng = np.random.default_rng(7)
    inputs = random_inputs(rng, 9, HC, 256)
    out = (np.full((9, 256), np.nan, np.float32), np.full((9, HC), np.nan, np.float32),
           np.full((9, HC, HC), np.nan, np.float32))
    got = hcwarm.hc_pre(*inputs, out=out)
    assert all(a is b for a, b in zip(got, out))
    compare(*out, *inputs)


def test_hc_pre_custom_constants_reach_the_kernel():
    rng = np.random.default_rng(8)
    residual, fn, scale, base, w = random_inputs(rng, 5, HC, 256)
    scale = np.array([0.5, 0.5, 8.0], np.float32)  # sharp logits: Sinkhorn is far from converged after 3 rounds
    fn = fn * 50
    _, _, comb20 = hcwarm.hc_pre(residual, fn, scale, base, w)
    y, post, comb3 = hcwarm.hc_pre(residual, fn, scale, base, w, sinkhorn_iters=3)
    want = ref.hc_pre(residual, fn, scale, base, w, 1e-6, 1e-6, 1e-6, 3)[2]
    assert np.allclose(comb3, want, rtol=5e-5, atol=1e-7)
    assert not np.allclose(comb3, comb20, rtol=1e-6, atol=0)


@pytest.mark.parametrize("t", [1, 33])
def test_hc_post_matches_reference(t):
    rng = np.random.default_rng(20 + t)
    d = 256
    x = rng.standard_normal((t, d)).astype(np.float32)
    residual = rng.standard_normal((t, HC, d)).astype(np.float32)
    post = rng.uniform(0, 2, (t, HC)).astype(np.float32)
    comb = rng.uniform(0, 1, (t, HC, HC)).astype(np.float32)
    got = hcwarm.hc_post(x, residual, post, comb)
    assert got.shape == (t, HC, d)
    assert np.array_equal(got, ref.bf16_round(got))
    compare_post(got, x, residual, post, comb)


def test_hc_post_in_place_into_residual():
    rng = np.random.default_rng(3)
    d = 256
    x = rng.standard_normal((4, d)).astype(np.float32)
    residual = ref.bf16_round(rng.standard_normal((4, HC, d)).astype(np.float32))
    post = rng.uniform(0, 2, (4, HC)).astype(np.float32)
    comb = rng.uniform(0, 1, (4, HC, HC)).astype(np.float32)
    before = residual.copy()
    got = hcwarm.hc_post(x, residual, post, comb, out=residual)
    assert got is residual
    compare_post(residual, x, before, post, comb)


def test_bfloat16_rounding_is_nearest_even():
    # 1 + 2^-8 is halfway between two bf16 values: ties go to the even one (1.0).
    vals = np.array([1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, -2.5, np.inf], np.float32)
    bits = hcwarm._numpy_ops.to_bf16_bits("x", vals)
    back = hcwarm._numpy_ops.from_bf16_bits(bits)
    assert list(back) == [1.0, 1.0 + 2 ** -6, -2.5, np.inf]
    assert np.isnan(hcwarm._numpy_ops.from_bf16_bits(hcwarm._numpy_ops.to_bf16_bits("x", np.array([np.nan],
                                                                                                   np.float32))))[0]
