"""Bad arguments raise TypeError / ValueError naming the argument, and write nothing."""
import numpy as np
import pytest

import hcwarm
from numerics import random_inputs

HC, D, T = 4, 256, 3


def good():
    return list(random_inputs(np.random.default_rng(0), T, HC, D))


@pytest.mark.parametrize("index,bad,exc,name", [
    (0, np.zeros((T, HC * D), np.float32), ValueError, "residual"),
    (0, np.zeros((T, HC, D), np.float64), TypeError, "residual"),
    (0, [[0.0]], TypeError, "residual"),
    (1, np.zeros((24, HC * D - 1), np.float32), ValueError, "fn"),
    (1, np.zeros((24, HC * D), np.float16), TypeError, "fn"),
    (2, np.zeros((4,), np.float32), ValueError, "scale"),
    (2, np.zeros((3,), np.int32), TypeError, "scale"),
    (3, np.zeros((23,), np.float32), ValueError, "base"),
    (4, np.zeros((D + 1,), np.float32), ValueError, "norm_weight"),
    (4, np.zeros((D,), np.int8), TypeError, "norm_weight"),
])
def test_hc_pre_bad_argument_is_named(index, bad, exc, name):
    args = good()
    args[index] = bad
    with pytest.raises(exc, match=name):
        hcwarm.hc_pre(*args)


def test_hc_pre_bad_out_is_named_and_untouched():
    args = good()
    y = np.full((T, D), 7.0, np.float32)
    post = np.full((T, HC), 7.0, np.float32)
    comb = np.full((T, HC + 1, HC), 7.0, np.float32)
    with pytest.raises(ValueError, match="comb"):
        hcwarm.hc_pre(*args, out=(y, post, comb))
    assert (y == 7).all() and (post == 7).all()
    with pytest.raises(TypeError, match="y"):
        hcwarm.hc_pre(*args, out=(y.astype(np.float64), post, np.zeros((T, HC, HC), np.float32)))
    with pytest.raises(ValueError, match="contiguous"):
        hcwarm.hc_pre(*args, out=(np.zeros((D, T), np.float32).T, post, np.zeros((T, HC, HC), np.float32)))
    with pytest.raises(TypeError, match="out"):
        hcwarm.hc_pre(*args, out=(y, post))
    assert (y == 7).all() and (post == 7).all()


@pytest.mark.parametrize("kw,exc", [
    ({"sinkhorn_iters": 0}, ValueError), ({"sinkhorn_iters": 2.5}, TypeError), ({"hc_eps": float("nan")}, ValueError),
    ({"rms_eps": "1e-6"}, TypeError), ({"post_mult": float("inf")}, ValueError), ({"rms_eps": -1e30}, ValueError),
    ({"hc_eps": -1}, ValueError), ({"norm_eps": 0.0}, ValueError),
])
def test_hc_pre_bad_constant_is_named(kw, exc):
    with pytest.raises(exc, match=next(iter(kw))):
        hcwarm.hc_pre(*good(), **kw)


def test_hc_post_bad_arguments_are_named():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((T, D)).astype(np.float32)
    residual = rng.standard_normal((T, HC, D)).astype(np.float32)
    post = np.ones((T, HC), np.float32)
    comb = np.ones((T, HC, HC), np.float32)
    with pytest.raises(ValueError, match="x"):
        hcwarm.hc_post(x[:, :-1], residual, post, comb)
    with pytest.raises(ValueError, match="post"):
        hcwarm.hc_post(x, residual, post[:, :2], comb)
    with pytest.raises(TypeError, match="comb"):
        hcwarm.hc_post(x, residual, post, comb.astype(np.float64))
    out = np.full((T, HC, D), 3.0, np.float32)
    with pytest.raises(ValueError, match="out"):
        hcwarm.hc_post(x, residual, post, comb, out=out[:, :2])
    assert (out == 3).all()


def test_bad_device_and_config_are_named():
    with pytest.raises(ValueError, match="device"):
        hcwarm.get_context("tpu:0")
    with pytest.raises(ValueError, match="device"):
        hcwarm.get_context("cuda:x")
    with pytest.raises(TypeError, match="config"):
        hcwarm.prewarm(3.5, device="cpu")
    with pytest.raises(hcwarm.InvalidArgumentError, match="neither a preset"):
        hcwarm.prewarm("no-such-model", device="cpu")
    with pytest.raises(ValueError, match="hidden_size"):
        hcwarm.model_config({"architectures": ["DeepseekV4ForCausalLM"], "hc_mult": 4, "num_hidden_layers": 1})
    with pytest.raises(TypeError, match="chunked_prefill_size"):
        hcwarm.prewarm("dsv4-flash", device="cpu", chunked_prefill_size="16k")


def test_library_errors_are_catchable_as_value_errors():
    assert issubclass(hcwarm.InvalidArgumentError, ValueError)
    assert issubclass(hcwarm.InvalidArgumentError, hcwarm.HcwarmError)
    assert issubclass(hcwarm.NotWarmedError, hcwarm.HcwarmError)
    assert issubclass(hcwarm.HcwarmError, RuntimeError)


def test_wait_timeouts_are_timeout_errors():
    # Raised when another process holds a kernel's lock past HCWARM_LOCK_TIMEOUT_S, or
    # the host compiler runs past HCWARM_COMPILE_TIMEOUT_S (the C++ tests provoke both).
    assert issubclass(hcwarm.WaitTimeoutError, TimeoutError)
    assert issubclass(hcwarm.WaitTimeoutError, hcwarm.HcwarmError)
    assert "WaitTimeoutError" in hcwarm.__all__
