"""The torch ops on CUDA: numerics against the float64 reference on a non-default
stream, caller buffers, CUDA-graph capture and replay, torch.compile, the capture
error, device ordinals and bad tensors. Marked gpu: skipped without PyTorch or a GPU.

HCWARM_TEST_REPORT=FILE appends one JSON line per numerics case (the measured errors).
"""
import json
import os

import numpy as np
import pytest

import hcwarm
from numerics import compare, compare_head, compare_post
import mhc_reference as ref

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

HC = 4
DEV = "cuda:0"


def report(case, errors):
    path = os.environ.get("HCWARM_TEST_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"case": case, **errors}) + "\n")


def inputs(t, d, seed, device=DEV, norm=True):
    # The C++ tests' distribution (numerics.random_inputs), drawn on the CPU.
    g = torch.Generator().manual_seed(seed)
    mix = HC * (2 + HC)
    residual = torch.randn(t, HC, d, generator=g).to(torch.bfloat16)
    fn = torch.randn(mix, HC * d, generator=g) * 1e-3
    scale = torch.randn(3, generator=g) * 0.1
    base = torch.randn(mix, generator=g) * 0.1
    w = (1 + 0.1 * torch.randn(d, generator=g)).to(torch.bfloat16) if norm else None
    cpu = (residual, fn, scale, base, w)
    dev = tuple(None if x is None else x.to(device) for x in cpu)
    return cpu, dev


def as_np(x):
    return None if x is None else x.float().cpu().numpy()


@pytest.fixture(scope="module", autouse=True)
def warmed():
    # Both presets up to 8192 tokens, with and without the fused norm: numerics below run warmed kernels.
    for model in ("dsv4-flash", "dsv4-pro"):
        hcwarm.prewarm(model, chunked_prefill_size=8192, device=DEV, fused_norm=None)


@pytest.mark.parametrize("model,d", [("dsv4-flash", 4096), ("dsv4-pro", 7168)])
@pytest.mark.parametrize("t", [1, 37, 64, 65, 300, 2048, 8192])
@pytest.mark.parametrize("norm", [True, False])
def test_hc_pre_on_a_side_stream_matches_reference(model, d, t, norm):
    cpu, dev = inputs(t, d, seed=t * 7 + d + norm, norm=norm)
    side = torch.cuda.Stream(DEV)
    side.wait_stream(torch.cuda.current_stream(DEV))
    with torch.cuda.stream(side):
        y, post, comb = hcwarm.hc_pre(*dev)
    side.synchronize()
    assert y.device == torch.device(DEV) and y.dtype == torch.bfloat16 and post.dtype == torch.float32
    errors = compare(as_np(y), as_np(post), as_np(comb), *[as_np(x) for x in cpu])
    report(f"hc_pre {model} T={t} norm={norm}", errors)


def test_hc_pre_out_buffers_and_zero_tokens():
    cpu, dev = inputs(40, 4096, seed=3)
    y = torch.full((40, 4096), float("nan"), dtype=torch.bfloat16, device=DEV)
    post = torch.full((40, HC), float("nan"), device=DEV)
    comb = torch.full((40, HC, HC), float("nan"), device=DEV)
    got = hcwarm.hc_pre(*dev, out=(y, post, comb))
    assert got[0] is y and got[1] is post and got[2] is comb
    torch.cuda.synchronize()
    compare(as_np(y), as_np(post), as_np(comb), *[as_np(x) for x in cpu])
    _, empty = inputs(0, 4096, seed=4)
    y0, p0, c0 = hcwarm.hc_pre(*empty)
    assert y0.shape == (0, 4096) and p0.shape == (0, HC) and c0.shape == (0, HC, HC)


@pytest.mark.parametrize("t", [1, 300, 4096])
def test_hc_post_matches_reference(t):
    g = torch.Generator().manual_seed(t)
    d = 7168
    x = torch.randn(t, d, generator=g).to(torch.bfloat16)
    residual = torch.randn(t, HC, d, generator=g).to(torch.bfloat16)
    post = torch.rand(t, HC, generator=g) * 2
    comb = torch.rand(t, HC, HC, generator=g)
    got = hcwarm.hc_post(x.to(DEV), residual.to(DEV), post.to(DEV), comb.to(DEV))
    report(f"hc_post T={t}", compare_post(as_np(got), as_np(x), as_np(residual), as_np(post), as_np(comb)))
    in_place = residual.to(DEV)
    hcwarm.hc_post(x.to(DEV), in_place, post.to(DEV), comb.to(DEV), out=in_place)
    assert torch.equal(in_place, got)


def decode_step(residual, layers):
    for fn, scale, base, w in layers:
        y, post, comb = hcwarm.hc_pre(residual, fn, scale, base, w)
        residual = hcwarm.hc_post(y * 0.5, residual, post, comb)
    return residual


def make_layers(d, n=2, seed=11):
    g = torch.Generator().manual_seed(seed)
    mix = HC * (2 + HC)
    return [((torch.randn(mix, HC * d, generator=g) * 1e-3).to(DEV), (torch.randn(3, generator=g) * 0.1).to(DEV),
             (torch.randn(mix, generator=g) * 0.1).to(DEV), (1 + 0.1 * torch.randn(d, generator=g)).to(torch.bfloat16).to(DEV))
            for _ in range(n)]


def test_graph_replay_equals_eager_with_no_compile():
    layers = make_layers(4096)
    before = hcwarm.compiles_after_ready(DEV)
    pool = torch.cuda.graph_pool_handle()
    graphs = []  # graphs sharing a pool stay alive together, as an engine keeps them
    for bs in (1, 2, 8, 64, 512):
        static_in = torch.randn(bs, HC, 4096).to(torch.bfloat16).to(DEV)
        side = torch.cuda.Stream(DEV)
        side.wait_stream(torch.cuda.current_stream(DEV))
        with torch.cuda.stream(side):
            decode_step(static_in, layers)  # eager first, as torch asks before capture
        torch.cuda.current_stream(DEV).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool):
            static_out = decode_step(static_in, layers)
        graphs.append((graph, static_in, static_out))
        for seed in range(3):
            fresh = torch.randn(bs, HC, 4096, generator=torch.Generator().manual_seed(seed))
            static_in.copy_(fresh.to(torch.bfloat16).to(DEV))
            graph.replay()
            eager = decode_step(static_in.clone(), layers)
            torch.cuda.synchronize()
            assert torch.equal(static_out, eager), f"batch {bs}: graph replay differs from eager"
    assert hcwarm.compiles_after_ready(DEV) == before == 0


def test_torch_compile_fullgraph_matches_eager():
    layers = make_layers(4096, n=1, seed=5)
    fn, scale, base, w = layers[0]

    def f(residual):
        y, post, comb = hcwarm.hc_pre(residual, fn, scale, base, w)
        return hcwarm.hc_post(torch.nn.functional.silu(y), residual, post, comb)

    compiled = torch.compile(f, fullgraph=True)
    residual = torch.randn(33, HC, 4096).to(torch.bfloat16).to(DEV)
    assert torch.equal(compiled(residual), f(residual))


def test_capture_of_an_unwarmed_bucket_raises_not_warmed():
    d = 2048  # no prewarm covered hidden 2048
    _, dev = inputs(5, d, seed=9)
    hcwarm.get_context(DEV)
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(hcwarm.NotWarmedError, match="split bucket num_splits=.*inside CUDA-graph capture"):
        with torch.cuda.graph(graph):
            hcwarm.hc_pre(*dev)
    # Nothing was compiled, and eager calls still work.
    assert hcwarm.compiles_after_ready(DEV) == 0
    y, _, _ = hcwarm.hc_pre(*dev)
    torch.cuda.synchronize()
    assert y.shape == (5, d)


def test_calls_leave_the_current_device_alone():
    n = torch.cuda.device_count()
    torch.cuda.set_device(0)
    _, dev = inputs(3, 4096, seed=1)
    hcwarm.hc_pre(*dev)
    assert torch.cuda.current_device() == 0
    if n < 2:
        pytest.skip("one GPU: the second ordinal cannot be checked here")
    _, dev1 = inputs(3, 4096, seed=1, device="cuda:1")
    y, post, comb = hcwarm.hc_pre(*dev1)
    assert y.device == torch.device("cuda:1") and torch.cuda.current_device() == 0
    y0, _, _ = hcwarm.hc_pre(*dev)
    torch.cuda.synchronize("cuda:1")
    assert torch.equal(y.cpu(), y0.cpu())


def test_bad_tensors_raise_named_errors_and_write_nothing():
    _, (residual, fn, scale, base, w) = inputs(4, 4096, seed=2)
    y = torch.zeros(4, 4096, dtype=torch.bfloat16, device=DEV)
    post = torch.zeros(4, HC, device=DEV)
    comb = torch.zeros(4, HC, HC, device=DEV)
    cases = [
        ((residual.float(), fn, scale, base, w), TypeError, "residual"),
        ((residual, fn.double(), scale, base, w), TypeError, "fn"),
        ((residual, fn.cpu(), scale, base, w), ValueError, "fn"),
        ((residual, fn, scale[:2], base, w), ValueError, "scale"),
        ((residual, fn, scale, base.to(torch.bfloat16), w), TypeError, "base"),
        ((residual, fn, scale, base, w[:-8]), ValueError, "norm_weight"),
        ((residual.transpose(0, 1).contiguous().transpose(0, 1), fn, scale, base, w), ValueError, "contiguous"),
    ]
    buf = torch.empty(4 * HC * 4096 + 1, dtype=torch.bfloat16, device=DEV)
    misaligned = buf[1:].view(4, HC, 4096)
    misaligned.copy_(residual)
    cases.append(((misaligned, fn, scale, base, w), ValueError, "residual.*16-byte"))
    for args, exc, name in cases:
        with pytest.raises(exc, match=name):
            hcwarm.hc_pre(*args, out=(y, post, comb))
    torch.cuda.synchronize()
    assert not y.any() and not post.any() and not comb.any(), "a refused call wrote its outputs"
    with pytest.raises(ValueError, match="out"):
        hcwarm.hc_pre(residual, fn, scale, base, w, out=(y[:3], post, comb))


# The rest of the family: the first layer from the embedding, the boundary, the head.

def embed_inputs(t, d, seed):
    cpu, dev = inputs(t, d, seed)
    embed = cpu[0][:, 0, :].contiguous()  # (T, D) bf16
    return embed, cpu[1:], embed.to(DEV), dev[1:]


@pytest.mark.parametrize("d", [4096, 7168])
@pytest.mark.parametrize("t", [1, 37, 300, 2048])
def test_hc_pre_from_the_embedding_matches_the_reference_on_its_copies(d, t):
    # The CUDA kernels fold fn over the streams: within hc_pre's tolerances of the copies' reference.
    embed, params, embed_dev, params_dev = embed_inputs(t, d, seed=t + d)
    copies = embed_dev.unsqueeze(1).expand(-1, HC, -1).contiguous()
    got = hcwarm.hc_pre(embed_dev, *params_dev)
    torch.cuda.synchronize()
    errors = compare(as_np(got[0]), as_np(got[1]), as_np(got[2]), as_np(copies), *[as_np(x) for x in params])
    report(f"hc_pre embed D={d} T={t}", errors)


def boundary_inputs(t, d, seed):
    cpu, dev = inputs(t, d, seed)
    g = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(t, d, generator=g).to(torch.bfloat16)
    prev_post = torch.rand(t, HC, generator=g) * 2
    prev_comb = torch.rand(t, HC, HC, generator=g)
    state = (x, cpu[0], prev_post, prev_comb)
    return state, cpu[1:], tuple(v.to(DEV) for v in state), dev[1:]


@pytest.mark.parametrize("d", [4096, 7168])
@pytest.mark.parametrize("t", [1, 64, 300, 4096])
def test_hc_post_pre_matches_the_reference_pair(d, t):
    state, params, state_dev, params_dev = boundary_inputs(t, d, seed=3 * t + d)
    new_residual, y, post, comb = hcwarm.hc_post_pre(*state_dev, *params_dev)
    torch.cuda.synchronize()
    report(f"hc_post_pre post D={d} T={t}", compare_post(as_np(new_residual), *[as_np(v) for v in state]))
    # The pre step ran on the bf16 new residual it stored.
    errors = compare(as_np(y), as_np(post), as_np(comb), as_np(new_residual), *[as_np(x) for x in params])
    report(f"hc_post_pre pre D={d} T={t}", errors)
    # In place, into the caller's buffers: the same values.
    residual = state_dev[1].clone()
    out = (torch.empty_like(y), torch.empty_like(post), torch.empty_like(comb))
    got = hcwarm.hc_post_pre(state_dev[0], residual, *state_dev[2:], *params_dev, new_residual=residual, out=out)
    assert got[0] is residual and all(a is b for a, b in zip(got[1:], out))
    torch.cuda.synchronize()
    assert torch.equal(residual, new_residual) and torch.equal(out[0], y)


def make_head(d, seed=21):
    g = torch.Generator().manual_seed(seed)
    return ((torch.randn(HC, HC * d, generator=g) * 1e-3).to(DEV), (torch.randn(1, generator=g) * 0.1).to(DEV),
            (torch.randn(HC, generator=g) * 0.1).to(DEV))


@pytest.mark.parametrize("d", [4096, 7168])
@pytest.mark.parametrize("t", [1, 5, 300, 8192])
def test_hc_head_matches_reference(d, t):
    g = torch.Generator().manual_seed(t + d)
    residual = torch.randn(t, HC, d, generator=g).to(torch.bfloat16).to(DEV)
    head = make_head(d)
    y = hcwarm.hc_head(residual, *head)
    out = torch.empty_like(y)
    assert hcwarm.hc_head(residual, *head, out=out) is out
    torch.cuda.synchronize()
    assert y.shape == (t, d) and y.dtype == torch.bfloat16 and torch.equal(y, out)
    report(f"hc_head D={d} T={t}", compare_head(as_np(y), as_np(residual), *[as_np(x) for x in head]))


def family_step(embed, layers, head):
    # A decoder loop on the whole family: first pre from the embedding, fused boundaries, the last post, the head.
    y, post, comb = hcwarm.hc_pre(embed, *layers[0])
    residual = embed.unsqueeze(1).expand(-1, HC, -1).contiguous()
    for params in layers[1:]:
        residual, y, post, comb = hcwarm.hc_post_pre(y * 0.5, residual, post, comb, *params, new_residual=residual)
    residual = hcwarm.hc_post(y * 0.5, residual, post, comb, out=residual)
    return hcwarm.hc_head(residual, *head)


def unfused_step(embed, layers, head):
    residual = embed.unsqueeze(1).expand(-1, HC, -1).contiguous()
    for params in layers:
        y, post, comb = hcwarm.hc_pre(residual, *params)
        residual = hcwarm.hc_post(y * 0.5, residual, post, comb)
    return hcwarm.hc_head(residual, *head)


def test_family_graph_replay_equals_eager_and_the_unfused_ops_with_no_compile():
    layers, head = make_layers(4096, n=4), make_head(4096)
    before = hcwarm.compiles_after_ready(DEV)
    pool = torch.cuda.graph_pool_handle()
    graphs = []
    for bs in (1, 8, 64, 512):
        static_in = torch.randn(bs, 4096).to(torch.bfloat16).to(DEV)
        side = torch.cuda.Stream(DEV)
        side.wait_stream(torch.cuda.current_stream(DEV))
        with torch.cuda.stream(side):
            family_step(static_in, layers, head)
        torch.cuda.current_stream(DEV).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool):
            static_out = family_step(static_in, layers, head)
        graphs.append((graph, static_in, static_out))
        for seed in range(2):
            fresh = torch.randn(bs, 4096, generator=torch.Generator().manual_seed(seed))
            static_in.copy_(fresh.to(torch.bfloat16).to(DEV))
            graph.replay()
            eager = family_step(static_in.clone(), layers, head)
            unfused = unfused_step(static_in.clone(), layers, head)
            torch.cuda.synchronize()
            assert torch.equal(static_out, eager), f"batch {bs}: graph replay differs from eager"
            # The fused boundary matches the unfused pair up to f32 summation order.
            ulps = ref.ulp_distance(as_np(eager), as_np(unfused).astype(np.float64))
            assert ulps.max() <= 2, f"batch {bs}: {ulps.max()} ulps between fused and unfused"
    # Per test, not per process: the unwarmed-bucket test's eager call compiles after ready by design.
    assert hcwarm.compiles_after_ready(DEV) == before


def test_family_under_torch_compile_fullgraph_matches_eager():
    layers, head = make_layers(4096, n=2, seed=6), make_head(4096, seed=7)

    def f(embed):
        y, post, comb = hcwarm.hc_pre(embed, *layers[0])
        residual = embed.unsqueeze(1).expand(-1, HC, -1).contiguous()
        residual, y, post, comb = hcwarm.hc_post_pre(torch.nn.functional.silu(y), residual, post, comb, *layers[1])
        residual = hcwarm.hc_post(y, residual, post, comb)
        return hcwarm.hc_head(residual, *head)

    compiled = torch.compile(f, fullgraph=True)
    embed = torch.randn(33, 4096).to(torch.bfloat16).to(DEV)
    assert torch.equal(compiled(embed), f(embed))


def test_check_coverage_after_prewarm_passes():
    before = hcwarm.compiles_after_ready(DEV)  # earlier tests' calls count too (the unwarmed bucket's)
    r = hcwarm.check_coverage(DEV)
    assert r.ok and r.calls > 0 and r.token_counts
    assert hcwarm.compiles_after_ready(DEV) == before


def test_family_bad_tensors_are_named():
    _, _, (x, residual, prev_post, prev_comb), params = boundary_inputs(4, 4096, seed=8)
    with pytest.raises(TypeError, match="prev_post"):
        hcwarm.hc_post_pre(x, residual, prev_post.double(), prev_comb, *params)
    with pytest.raises(ValueError, match="x"):
        hcwarm.hc_post_pre(x.cpu(), residual, prev_post, prev_comb, *params)
    y, post, comb = hcwarm.hc_pre(residual, *params)
    with pytest.raises(ValueError, match="prev_post"):  # the gates read are the gates written
        hcwarm.hc_post_pre(x, residual, post, comb, *params, out=(y, post, comb))
    head = make_head(4096)
    with pytest.raises(TypeError, match="head_fn"):
        hcwarm.hc_head(residual, head[0].double(), *head[1:])
    with pytest.raises(ValueError, match="head_base"):
        hcwarm.hc_head(residual, head[0], head[1], head[2].cpu())
    with pytest.raises(ValueError, match="residual"):
        hcwarm.hc_head(residual[:, 0, :], *head)
