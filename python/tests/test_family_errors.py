"""Bad arguments of hc_pre on the embedding, hc_post_pre and hc_head raise TypeError /
ValueError naming the argument, before anything is written."""
import numpy as np
import pytest

import hcwarm
from numerics import random_inputs, random_post_state

HC, D, T = 4, 256, 3


def boundary():
    rng = np.random.default_rng(0)
    residual, fn, scale, base, w = random_inputs(rng, T, HC, D)
    x, prev_post, prev_comb = random_post_state(rng, T, HC, D)
    return [x, residual, prev_post, prev_comb, fn, scale, base, w]


def head():
    rng = np.random.default_rng(1)
    return [rng.standard_normal((T, HC, D)).astype(np.float32), np.zeros((HC, HC * D), np.float32),
            np.zeros((1,), np.float32), np.zeros((HC,), np.float32)]


def test_hc_pre_embedding_whose_width_does_not_fit_fn_is_named():
    _, fn, scale, base, w = random_inputs(np.random.default_rng(2), T, HC, D)
    with pytest.raises(ValueError, match="residual.*embedding.*fn"):
        hcwarm.hc_pre(np.zeros((T, D + 1), np.float32), fn, scale, base, None)
    with pytest.raises(ValueError, match="norm_weight"):
        hcwarm.hc_pre(np.zeros((T, D), np.float32), fn, scale, base, np.zeros(D + 1, np.float32))
    with pytest.raises(ValueError, match="residual"):
        hcwarm.hc_pre(np.zeros((T, 2, HC, D), np.float32), fn, scale, base, w)


@pytest.mark.parametrize("index,bad,exc,name", [
    (0, np.zeros((T, D + 1), np.float32), ValueError, "x"),
    (0, np.zeros((T, D), np.float64), TypeError, "x"),
    (1, np.zeros((T, D), np.float32), ValueError, "residual"),
    (2, np.zeros((T, HC + 1), np.float32), ValueError, "prev_post"),
    (3, np.zeros((T, HC, HC), np.int32), TypeError, "prev_comb"),
    (3, np.zeros((T + 1, HC, HC), np.float32), ValueError, "prev_comb"),
    (4, np.zeros((24, HC * D - 1), np.float32), ValueError, "fn"),
    (5, np.zeros((2,), np.float32), ValueError, "scale"),
    (6, np.zeros((24,), np.float16), TypeError, "base"),
    (7, np.zeros((D - 1,), np.float32), ValueError, "norm_weight"),
])
def test_hc_post_pre_bad_argument_is_named(index, bad, exc, name):
    args = boundary()
    args[index] = bad
    with pytest.raises(exc, match=name):
        hcwarm.hc_post_pre(*args)


def test_hc_post_pre_bad_outputs_are_named_and_nothing_is_written():
    args = boundary()
    residual = args[1]
    before = residual.copy()
    with pytest.raises(ValueError, match="new_residual"):
        hcwarm.hc_post_pre(*args, new_residual=np.zeros((T, HC, D + 1), np.float32))
    y = np.full((T, D), 7.0, np.float32)
    with pytest.raises(ValueError, match="comb"):
        hcwarm.hc_post_pre(*args, new_residual=residual,
                           out=(y, np.zeros((T, HC), np.float32), np.zeros((T, HC, HC + 1), np.float32)))
    assert np.array_equal(residual, before) and (y == 7).all()
    with pytest.raises(TypeError, match="out"):
        hcwarm.hc_post_pre(*args, out=(y,))
    with pytest.raises(ValueError, match="sinkhorn_iters"):
        hcwarm.hc_post_pre(*args, new_residual=residual, sinkhorn_iters=0)
    assert np.array_equal(residual, before)


@pytest.mark.parametrize("index,bad,exc,name", [
    (0, np.zeros((T, D), np.float32), ValueError, "residual"),
    (0, np.zeros((T, HC, D), np.float64), TypeError, "residual"),
    (1, np.zeros((HC + 1, HC * D), np.float32), ValueError, "head_fn"),
    (1, np.zeros((24, HC * D), np.float32), ValueError, "head_fn"),
    (2, np.zeros((3,), np.float32), ValueError, "head_scale"),
    (2, np.zeros((1,), np.float64), TypeError, "head_scale"),
    (3, np.zeros((HC + 1,), np.float32), ValueError, "head_base"),
    (3, [0.0] * HC, TypeError, "head_base"),
])
def test_hc_head_bad_argument_is_named(index, bad, exc, name):
    args = head()
    args[index] = bad
    with pytest.raises(exc, match=name):
        hcwarm.hc_head(*args)


def test_hc_head_bad_out_and_constants_are_named():
    out = np.full((T, D), 7.0, np.float32)
    with pytest.raises(ValueError, match="out"):
        hcwarm.hc_head(*head(), out=np.zeros((T, D + 1), np.float32))
    with pytest.raises(TypeError, match="out"):
        hcwarm.hc_head(*head(), out=out.astype(np.float64))
    with pytest.raises(ValueError, match="rms_eps"):
        hcwarm.hc_head(*head(), out=out, rms_eps=float("nan"))
    with pytest.raises(TypeError, match="hc_eps"):
        hcwarm.hc_head(*head(), hc_eps="1e-6")
    assert (out == 7).all()


def test_check_coverage_arguments():
    with pytest.raises(TypeError, match="fused_norm"):
        hcwarm.check_coverage("cpu", fused_norm=None)
    with pytest.raises(ValueError, match="device"):
        hcwarm.check_coverage("tpu")
