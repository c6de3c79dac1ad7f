"""The argument bounds of the four ops, on NumPy arrays and torch CPU tensors: epsilons are
positive and finite, a call has at most MAX_TOKENS tokens, and a zero-stride (broadcast) view
is refused rather than expanded into a silent copy. Huge token counts are faked with
zero-stride views: the checks are on shapes, so nothing of that size is allocated."""
import math
import re

import numpy as np
import pytest

import hcwarm
from hcwarm import _checks
from numerics import random_inputs, random_post_state

HC, D, T = 4, 256, 3
BIG = _checks.MAX_TOKENS + 1
BAD_EPS = [-1e30, -1.0, -1, 0.0, -0.0, 0, math.inf, -math.inf, math.nan]


def pre_args():
    return list(random_inputs(np.random.default_rng(0), T, HC, D))


def post_args():
    rng = np.random.default_rng(1)
    residual = rng.standard_normal((T, HC, D)).astype(np.float32)
    x, post, comb = random_post_state(rng, T, HC, D)
    return [x, residual, post, comb]


def post_pre_args():
    rng = np.random.default_rng(2)
    residual, fn, scale, base, w = random_inputs(rng, T, HC, D)
    x, prev_post, prev_comb = random_post_state(rng, T, HC, D)
    return [x, residual, prev_post, prev_comb, fn, scale, base, w]


def head_args():
    rng = np.random.default_rng(3)
    return [rng.standard_normal((T, HC, D)).astype(np.float32), (rng.standard_normal((HC, HC * D)) * 1e-3)
            .astype(np.float32), np.ones((1,), np.float32), np.zeros((HC,), np.float32)]


def embed_args():
    args = pre_args()
    args[0] = args[0][:, 0].copy()
    return args


# op: (call, arguments, their names, the indices of the bf16 ones, the indices with a leading T)
OPS = {
    "hc_pre": (hcwarm.hc_pre, pre_args, ("residual", "fn", "scale", "base", "norm_weight"), (0, 4), (0,)),
    "hc_pre_embed": (hcwarm.hc_pre, embed_args, ("residual", "fn", "scale", "base", "norm_weight"), (0, 4), (0,)),
    "hc_post": (hcwarm.hc_post, post_args, ("x", "residual", "post", "comb"), (0, 1), (0, 1, 2, 3)),
    "hc_post_pre": (hcwarm.hc_post_pre, post_pre_args,
                    ("x", "residual", "prev_post", "prev_comb", "fn", "scale", "base", "norm_weight"), (0, 1, 7),
                    (0, 1, 2, 3)),
    "hc_head": (hcwarm.hc_head, head_args, ("residual", "head_fn", "head_scale", "head_base"), (0,), (0,)),
}
EPS_OPS = [(op, name) for op in ("hc_pre", "hc_post_pre") for name in ("hc_eps", "rms_eps", "norm_eps")]
EPS_OPS += [("hc_head", "hc_eps"), ("hc_head", "rms_eps")]
# Every input but head_scale (1,), which no view can repeat.
ARGS = [(op, i) for op, (_, _, names, _, _) in OPS.items() for i in range(len(names)) if names[i] != "head_scale"]


def spread(a, t, lib):
    """A zero-stride view of a's first row as t rows (no memory of that size)."""
    if lib == "numpy":
        return np.broadcast_to(a[:1], (t,) + a.shape[1:])
    return a[:1].expand(t, *a.shape[1:])


def huge(op, lib):
    call, make, _, bf16, leading = OPS[op]
    args = convert(make(), bf16, lib)
    for i in leading:
        args[i] = spread(args[i], BIG, lib)
    return call, args


def convert(args, bf16, lib):
    if lib == "numpy":
        return args
    torch = pytest.importorskip("torch")
    return [torch.from_numpy(a).to(torch.bfloat16 if i in bf16 else torch.float32) for i, a in enumerate(args)]


def broadcast_view(a, lib):
    """a's shape, every element the first one: zero strides throughout."""
    if lib == "numpy":
        return np.broadcast_to(a.reshape(-1)[:1].reshape((1,) * a.ndim), a.shape)
    return a.reshape(-1)[:1].reshape((1,) * a.dim()).expand(*a.shape)


LIBS = ["numpy", "torch"]


# ---- epsilons -------------------------------------------------------------------------------------

@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("value", BAD_EPS, ids=repr)
@pytest.mark.parametrize("op,name", EPS_OPS)
def test_an_epsilon_that_is_not_positive_and_finite_is_refused(lib, op, name, value):
    call, make, _, bf16, _ = OPS[op]
    args = convert(make(), bf16, lib)
    with pytest.raises(ValueError, match=rf"^{name}: expected a positive finite float, got {re.escape(str(value))}$"):
        call(*args, **{name: value})


def test_a_negative_epsilon_names_its_value():
    with pytest.raises(ValueError, match=r"^rms_eps: expected a positive finite float, got -1e\+30$"):
        hcwarm.hc_pre(*pre_args(), rms_eps=-1e30)
    with pytest.raises(ValueError, match=r"^hc_eps: expected a positive finite float, got -1$"):
        hcwarm.hc_head(*head_args(), hc_eps=-1)


def test_a_bad_epsilon_writes_nothing():
    y, post, comb = (np.full(s, 7.0, np.float32) for s in ((T, D), (T, HC), (T, HC, HC)))
    with pytest.raises(ValueError, match="norm_eps"):
        hcwarm.hc_pre(*pre_args(), out=(y, post, comb), norm_eps=-1e-6)
    out = np.full((T, D), 7.0, np.float32)
    with pytest.raises(ValueError, match="rms_eps"):
        hcwarm.hc_head(*head_args(), out=out, rms_eps=0.0)
    assert (y == 7).all() and (post == 7).all() and (comb == 7).all() and (out == 7).all()


@pytest.mark.parametrize("lib", LIBS)
def test_positive_epsilons_and_any_finite_post_mult_are_taken(lib):
    call, make, _, bf16, _ = OPS["hc_pre"]
    y, post, comb = call(*convert(make(), bf16, lib), hc_eps=1e-30, rms_eps=1, norm_eps=1e-3, post_mult=-1.0)
    assert all(np.isfinite(np.asarray(v.float() if lib == "torch" else v)).all() for v in (y, post, comb))
    call, make, _, bf16, _ = OPS["hc_head"]
    y = call(*convert(make(), bf16, lib), hc_eps=1e-30, rms_eps=1)
    assert np.isfinite(np.asarray(y.float() if lib == "torch" else y)).all()


def test_the_shared_check_on_constants():
    assert _checks.constants(20, 1e-6, 1, 2e-6, 0.0) == (20, 1e-6, 1.0, 2e-6, 0.0)
    for bad in (0.0, -1e-6, math.inf, math.nan):
        with pytest.raises(ValueError, match="rms_eps"):
            _checks.constants(20, 1e-6, bad, 1e-6, 2.0)
    with pytest.raises(ValueError, match="post_mult: expected a finite float"):
        _checks.constants(20, 1e-6, 1e-6, 1e-6, math.inf)
    with pytest.raises(TypeError, match="hc_eps"):
        _checks.eps("hc_eps", True)


def test_bad_epsilons_are_refused_by_the_torch_operators_and_their_fakes():
    torch = pytest.importorskip("torch")
    residual, fn, scale, base, w = convert(pre_args(), (0, 4), "torch")
    ops = torch.ops.hcwarm
    with pytest.raises(ValueError, match="hc_eps"):
        ops.hc_pre(residual, fn, scale, base, w, 20, -1.0, 1e-6, 1e-6, 2.0)
    head = convert(head_args(), (0,), "torch")
    with pytest.raises(ValueError, match="rms_eps"):
        ops.hc_head(*head, 1e-6, 0.0)
    with torch._subclasses.fake_tensor.FakeTensorMode():
        r = torch.empty(T, HC, D, dtype=torch.bfloat16)
        with pytest.raises(ValueError, match="norm_eps"):
            ops.hc_pre(r, torch.empty(24, HC * D), torch.empty(3), torch.empty(24), None, 20, 1e-6, 1e-6,
                       float("nan"), 2.0)


# ---- tokens per call ------------------------------------------------------------------------------

@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("op", list(OPS))
def test_more_tokens_than_the_bound_are_refused(lib, op):
    call, args = huge(op, lib)
    with pytest.raises(ValueError, match=rf"^residual: {BIG} tokens exceed hcwarm's bound of {BIG - 1} per call$"):
        call(*args)


@pytest.mark.parametrize("op", list(OPS))
def test_more_tokens_than_the_bound_are_refused_by_the_torch_operators(op):
    torch = pytest.importorskip("torch")
    _, args = huge(op, "torch")
    name = "hc_pre" if op == "hc_pre_embed" else op
    consts = (20, 1e-6, 1e-6, 1e-6, 2.0) if name in ("hc_pre", "hc_post_pre") else (1e-6, 1e-6) if op == "hc_head" \
        else ()
    with pytest.raises(ValueError, match=f"residual: {BIG} tokens"):
        getattr(torch.ops.hcwarm, name)(*args, *consts)


def test_the_bound_itself_is_inclusive():
    # At exactly MAX_TOKENS the shape check passes; the zero-stride view is then refused, not copied.
    args = pre_args()
    args[0] = spread(args[0], _checks.MAX_TOKENS, "numpy")
    with pytest.raises(ValueError, match="residual: a zero-stride"):
        hcwarm.hc_pre(*args)
    assert _checks.tokens(_checks.MAX_TOKENS) == _checks.MAX_TOKENS
    with pytest.raises(ValueError, match="residual"):
        _checks.tokens(_checks.MAX_TOKENS + 1)


# ---- zero-stride views ----------------------------------------------------------------------------

@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("op,index", ARGS)
def test_a_zero_stride_input_is_refused_naming_it(lib, op, index):
    call, make, names, bf16, _ = OPS[op]
    args = convert(make(), bf16, lib)
    args[index] = broadcast_view(args[index], lib)
    with pytest.raises(ValueError, match=rf"^{names[index]}: a zero-stride \(broadcast\) view"):
        call(*args)


def test_a_zero_stride_tensor_is_refused_on_a_cached_signature():
    torch = pytest.importorskip("torch")
    args = convert(pre_args(), (0, 4), "torch")
    hcwarm.hc_pre(*args)
    args[0] = spread(args[0], T, "torch")
    for call in (hcwarm.hc_pre, torch.ops.hcwarm.hc_pre):
        with pytest.raises(ValueError, match="residual: a zero-stride"):
            call(*args, *(() if call is hcwarm.hc_pre else (20, 1e-6, 1e-6, 1e-6, 2.0)))


def test_a_zero_stride_out_is_refused():
    y, post, comb = hcwarm.hc_pre(*pre_args())
    with pytest.raises(ValueError, match="out"):
        hcwarm.hc_pre(*pre_args(), out=(broadcast_view(y, "numpy"), post, comb))


def test_other_strided_views_and_size_one_zero_strides_are_taken():
    # A strided view is copied at its own size; a zero stride on a dimension of 1 repeats nothing.
    args = head_args()
    want = hcwarm.hc_head(*args)
    wide = np.zeros((T, HC, 2 * D), np.float32)
    wide[:, :, ::2] = args[0]
    scale = np.lib.stride_tricks.as_strided(args[2], shape=(1,), strides=(0,))
    got = hcwarm.hc_head(wide[:, :, ::2], np.asfortranarray(args[1]), scale, args[3])
    assert np.array_equal(got, want)
    one = np.lib.stride_tricks.as_strided(args[0], shape=(1, HC, D), strides=(0,) + args[0].strides[1:])
    assert np.array_equal(hcwarm.hc_head(one, *args[1:]), want[:1])
