"""The rest of the mHC family on NumPy arrays (CPU backend) against the float64 reference:
hc_pre of the first layer from the embedding, the sublayer boundary hc_post_pre, the head."""
import numpy as np
import pytest

import hcwarm
from numerics import compare, compare_head, compare_post, random_inputs, random_post_state
import mhc_reference as ref

HC, D = 4, 256


@pytest.mark.parametrize("t", [1, 37, 130])
@pytest.mark.parametrize("norm", [True, False])
def test_hc_pre_from_the_embedding_equals_hc_pre_on_its_copies(t, norm):
    rng = np.random.default_rng(300 + t + norm)
    _, fn, scale, base, w = random_inputs(rng, t, HC, D, norm)
    embed = ref.bf16_round(rng.standard_normal((t, D)).astype(np.float32))
    copies = np.repeat(embed[:, None, :], HC, axis=1)
    got = hcwarm.hc_pre(embed, fn, scale, base, w)
    want = hcwarm.hc_pre(copies, fn, scale, base, w)
    assert got[0].shape == (t, D) and got[1].shape == (t, HC) and got[2].shape == (t, HC, HC)
    for a, b, name in zip(got, want, ("y", "post", "comb")):
        assert np.array_equal(a, b), f"{name}: the embedding's results differ from those of its copies"
    compare(*got, copies, fn, scale, base, w)


def test_hc_pre_from_the_embedding_writes_out_and_takes_zero_tokens():
    rng = np.random.default_rng(4)
    _, fn, scale, base, w = random_inputs(rng, 3, HC, D)
    embed = rng.standard_normal((3, D)).astype(np.float32)
    out = (np.full((3, D), np.nan, np.float32), np.full((3, HC), np.nan, np.float32),
           np.full((3, HC, HC), np.nan, np.float32))
    got = hcwarm.hc_pre(embed, fn, scale, base, w, out=out)
    assert all(a is b for a, b in zip(got, out))
    compare(*out, np.repeat(embed[:, None, :], HC, axis=1), fn, scale, base, w)
    y, post, comb = hcwarm.hc_pre(np.zeros((0, D), np.float32), fn, scale, base, w)
    assert y.shape == (0, D) and post.shape == (0, HC) and comb.shape == (0, HC, HC)


def boundary_case(seed, t, norm=True):
    rng = np.random.default_rng(seed)
    residual, fn, scale, base, w = random_inputs(rng, t, HC, D, norm)
    residual = ref.bf16_round(residual)
    x, prev_post, prev_comb = random_post_state(rng, t, HC, D)
    return x, residual, prev_post, prev_comb, fn, scale, base, w


def check_boundary(got, x, residual, prev_post, prev_comb, fn, scale, base, w):
    new_residual, y, post, comb = got
    assert np.array_equal(new_residual, ref.bf16_round(new_residual)), "new_residual must hold bf16 values"
    compare_post(new_residual, x, residual, prev_post, prev_comb)
    # The pre step ran on the bf16 new residual it stored.
    compare(y, post, comb, new_residual, fn, scale, base, w)


@pytest.mark.parametrize("t", [1, 37, 130])
@pytest.mark.parametrize("norm", [True, False])
def test_hc_post_pre_matches_the_reference_pair(t, norm):
    case = boundary_case(500 + t + norm, t, norm)
    got = hcwarm.hc_post_pre(*case)
    assert [a.shape for a in got] == [(t, HC, D), (t, D), (t, HC), (t, HC, HC)]
    check_boundary(got, *case)


def test_hc_post_pre_in_place_into_the_residual_and_into_out_buffers():
    x, residual, prev_post, prev_comb, fn, scale, base, w = boundary_case(9, 20)
    before = residual.copy()
    out = (np.full((20, D), np.nan, np.float32), np.full((20, HC), np.nan, np.float32),
           np.full((20, HC, HC), np.nan, np.float32))
    got = hcwarm.hc_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, w, new_residual=residual, out=out)
    assert got[0] is residual and all(a is b for a, b in zip(got[1:], out))
    check_boundary(got, x, before, prev_post, prev_comb, fn, scale, base, w)


def test_hc_post_pre_equals_hc_post_then_hc_pre_within_the_tolerances():
    # The boundary's contract: the unfused pair's values, both bf16 roundings.
    x, residual, prev_post, prev_comb, fn, scale, base, w = boundary_case(10, 33)
    new_residual, y, post, comb = hcwarm.hc_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, w)
    pair_residual = hcwarm.hc_post(x, residual, prev_post, prev_comb)
    assert ref.ulp_distance(new_residual, pair_residual.astype(np.float64)).max() <= 1
    py, ppost, pcomb = hcwarm.hc_pre(pair_residual, fn, scale, base, w)
    if np.array_equal(new_residual, pair_residual):
        assert ref.ulp_distance(y, py.astype(np.float64)).max() <= 1
        assert np.allclose(post, ppost, rtol=1e-6, atol=0) and np.allclose(comb, pcomb, rtol=1e-6, atol=0)


def test_hc_post_pre_zero_tokens():
    x, residual, prev_post, prev_comb, fn, scale, base, w = boundary_case(11, 0)
    got = hcwarm.hc_post_pre(x, residual, prev_post, prev_comb, fn, scale, base, w)
    assert [a.shape for a in got] == [(0, HC, D), (0, D), (0, HC), (0, HC, HC)]


def head_case(seed, t):
    rng = np.random.default_rng(seed)
    residual = rng.standard_normal((t, HC, D)).astype(np.float32)
    head_fn = (rng.standard_normal((HC, HC * D)) * 1e-3).astype(np.float32)
    head_scale = (rng.standard_normal(1) * 0.1).astype(np.float32)
    head_base = (rng.standard_normal(HC) * 0.1).astype(np.float32)
    return residual, head_fn, head_scale, head_base


@pytest.mark.parametrize("t", [1, 5, 64, 131])
def test_hc_head_matches_reference(t):
    case = head_case(700 + t, t)
    y = hcwarm.hc_head(*case)
    assert y.shape == (t, D) and y.dtype == np.float32
    assert np.array_equal(y, ref.bf16_round(y)), "y must hold bf16 values"
    compare_head(y, *case)


def test_hc_head_out_buffer_and_zero_tokens():
    case = head_case(8, 6)
    out = np.full((6, D), np.nan, np.float32)
    assert hcwarm.hc_head(*case, out=out) is out
    compare_head(out, *case)
    assert hcwarm.hc_head(*head_case(8, 0)).shape == (0, D)


def test_a_model_forward_through_the_family_matches_the_unfused_ops():
    # What an engine's decoder loop does: the first pre from the embedding, boundaries, the last
    # post and the head, against hc_pre / hc_post on materialized streams (the same values).
    rng = np.random.default_rng(12)
    t, sublayers = 9, 4
    embed = ref.bf16_round(rng.standard_normal((t, D)).astype(np.float32))
    params = [random_inputs(rng, 1, HC, D)[1:] for _ in range(sublayers)]
    head = head_case(13, 1)[1:]

    def sublayer(y):
        return ref.bf16_round(0.5 * y)

    y, post, comb = hcwarm.hc_pre(embed, *params[0])
    residual = np.repeat(embed[:, None, :], HC, axis=1)
    for i in range(1, sublayers):
        residual, y, post, comb = hcwarm.hc_post_pre(sublayer(y), residual, post, comb, *params[i],
                                                     new_residual=residual)
    residual = hcwarm.hc_post(sublayer(y), residual, post, comb, out=residual)
    fused = hcwarm.hc_head(residual, *head)

    streams = np.repeat(embed[:, None, :], HC, axis=1)
    for p in params:
        y, post, comb = hcwarm.hc_pre(streams, *p)
        streams = hcwarm.hc_post(sublayer(y), streams, post, comb)
    unfused = hcwarm.hc_head(streams, *head)
    assert ref.ulp_distance(fused, unfused.astype(np.float64)).max() <= 2
