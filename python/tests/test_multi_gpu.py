"""Several ranks, one cache: scripts/multi_gpu_check.py run with two ranks (on two GPUs
with NCCL, or both on one GPU with gloo), and the ops on a second GPU captured there
while the caller's current device is the first. Marked gpu: skipped without PyTorch
or a GPU; the second-GPU test also without two GPUs."""
import json
import os
import subprocess
import sys

import pytest

import hcwarm

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "multi_gpu_check.py")


@pytest.fixture(autouse=True)
def needs_cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")


def test_two_ranks_warm_one_cache_and_serve_on_their_devices(tmp_path):
    out = tmp_path / "report.json"
    cache = tmp_path / "cache"
    r = subprocess.run([sys.executable, SCRIPT, "--ranks", "2", "--model", "dsv4-flash", "--chunked-prefill-size",
                        "512", "--cache-dir", str(cache), "--json-out", str(out)],
                       capture_output=True, text=True, timeout=540)
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(out.read_text())
    cold, restart = report["phases"]["cold"], report["phases"]["restart"]
    assert cold["compiled_total"] == cold["planned_keys"] > 0
    assert restart["compiled_total"] == 0
    alone = report["phases"]["alone"]
    assert len(alone["ranks"]) == 1 and alone["compiled_total"] == alone["planned_keys"] == cold["planned_keys"]
    assert report["cold_ready_over_alone"] > 0
    for rank in cold["ranks"]:
        assert rank["serve"]["graph_replay_bit_equal"] is True
        assert rank["serve"]["compiles_after_ready"] == 0


def test_second_gpu_capture_leaves_the_current_device_alone():
    if torch.cuda.device_count() < 2:
        pytest.skip("one GPU: the second ordinal cannot be checked here")
    torch.cuda.set_device(0)
    hcwarm.prewarm("dsv4-flash", chunked_prefill_size=256, device="cuda:1")
    dev = torch.device("cuda:1")
    g = torch.Generator().manual_seed(3)
    t, d, hc = 4, 4096, 4
    residual = torch.randn(t, hc, d, generator=g).to(torch.bfloat16).to(dev)
    fn = (torch.randn(hc * (2 + hc), hc * d, generator=g) * 1e-3).to(dev)
    scale = (torch.randn(3, generator=g) * 0.1).to(dev)
    base = (torch.randn(hc * (2 + hc), generator=g) * 0.1).to(dev)
    y = torch.empty(t, d, dtype=torch.bfloat16, device=dev)
    post = torch.empty(t, hc, device=dev)
    comb = torch.empty(t, hc, hc, device=dev)
    stream = torch.cuda.Stream(dev)
    with torch.cuda.device(dev), torch.cuda.stream(stream):
        hcwarm.hc_pre(residual, fn, scale, base, out=(y, post, comb))
    stream.synchronize()
    eager = y.clone()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.device(dev):
        with torch.cuda.graph(graph, stream=stream):
            hcwarm.hc_pre(residual, fn, scale, base, out=(y, post, comb))
    y.zero_()
    graph.replay()
    torch.cuda.synchronize(dev)
    assert torch.equal(y, eager)
    assert torch.cuda.current_device() == 0
    assert hcwarm.compiles_after_ready("cuda:1") == 0
