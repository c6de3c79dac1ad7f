"""The engine adapters without PyTorch or the engines: install()/uninstall() against stand-in
modules laid out like SGLang's and vLLM's, the engine-absent path, the signatures (written out
from the engines' sources), the warmup hooks' calls to hcwarm.prewarm and the CustomOp method
wrapper. The numerics are in test_integrations_torch.py.
"""
import importlib.util
import inspect
import sys
import types
import warnings
from types import SimpleNamespace

import pytest

import hcwarm
import hcwarm.integrations.sglang as hc_sglang
import hcwarm.integrations.vllm as hc_vllm
from hcwarm.integrations import EngineArgumentError
from hcwarm.integrations._patch import as_method

SG_KERNELS = "sglang.kernels.ops.layernorm.mhc"
SG_HEAD = "sglang.kernels.ops.layernorm.mhc_head"
SG_MODEL = "sglang.srt.models.deepseek_v4"
VL_KERNELS = "vllm.model_executor.kernels.mhc.tilelang"
VL_PACKAGE = "vllm.model_executor.kernels.mhc"
VL_WARMUP = "vllm.model_executor.warmup.deepseek_v4_mhc_warmup"
VL_KERNEL_WARMUP = "vllm.model_executor.warmup.kernel_warmup"
VL_LAYERS = "vllm.model_executor.layers.mhc"


def engine_fn(name, like=None):
    """A stand-in for the engine's function: its name and, when like is given, that signature."""
    def f(*args, **kwargs):
        return ("engine", name)

    f.__name__ = name
    if like is not None:
        f.__signature__ = inspect.signature(like)
    return f


def add_modules(monkeypatch, spec):
    """Stand-in modules: spec maps a dotted name to its attributes; missing parents become empty packages."""
    for name in spec:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            dotted = ".".join(parts[:i])
            if dotted not in sys.modules:
                mod = types.ModuleType(dotted)
                mod.__path__ = []
                monkeypatch.setitem(sys.modules, dotted, mod)
    for name, attrs in spec.items():
        for attr, value in attrs.items():
            monkeypatch.setattr(sys.modules[name], attr, value, raising=False)
    return {name: sys.modules[name] for name in spec}


@pytest.fixture
def fake_sglang(monkeypatch):
    if importlib.util.find_spec("sglang") is not None and "sglang" not in sys.modules:
        pytest.skip("the real SGLang is installed")
    kernels = {n: engine_fn(n, f) for n, f in hc_sglang.ADAPTERS.items()}
    head = {"fused_hc_head": engine_fn("fused_hc_head", hc_sglang.fused_hc_head)}
    mods = add_modules(monkeypatch, {
        SG_KERNELS: kernels,
        SG_HEAD: head,
        # the model file's module-level imports, and a same-named function of its own kind
        SG_MODEL: {"mhc_fused_post_pre": kernels["mhc_fused_post_pre"], "mhc_pre": kernels["mhc_pre"],
                   "fused_hc_head": head["fused_hc_head"], "npu_hc_pre": engine_fn("npu_hc_pre")},
        "sglang.srt.npu": {"mhc_post": engine_fn("mhc_post")},
    })
    yield mods, {**kernels, **head}
    hc_sglang.uninstall()


def test_sglang_install_replaces_every_holder_and_uninstall_restores(fake_sglang, monkeypatch):
    mods, originals = fake_sglang
    adapters = {**hc_sglang.ADAPTERS, **hc_sglang.HEAD_ADAPTERS}
    replaced = hc_sglang.install()
    want = {f"{SG_KERNELS}.{n}" for n in hc_sglang.ADAPTERS} | {f"{SG_HEAD}.fused_hc_head"} | {
        f"{SG_MODEL}.{n}" for n in ("mhc_fused_post_pre", "mhc_pre", "fused_hc_head")}
    assert set(replaced) == want
    for key, original in replaced.items():
        module, name = key.rsplit(".", 1)
        assert original is originals[name]
        assert getattr(mods[module], name) is adapters[name]
    assert mods["sglang.srt.npu"].mhc_post is not adapters["mhc_post"]  # another function of that name
    assert mods[SG_MODEL].npu_hc_pre.__name__ == "npu_hc_pre"

    assert hc_sglang.install() == replaced  # idempotent: nothing wrapped twice
    assert mods[SG_KERNELS].mhc_pre is hc_sglang.mhc_pre

    # a module imported after install() binds the adapter; uninstall() gives it the original too
    late = add_modules(monkeypatch, {"sglang.srt.late": {"mhc_post": hc_sglang.mhc_post}})["sglang.srt.late"]
    restored = hc_sglang.uninstall()
    assert set(restored) == want | {"sglang.srt.late.mhc_post"}
    for key in want:
        module, name = key.rsplit(".", 1)
        assert getattr(mods[module], name) is originals[name]
    assert late.mhc_post is originals["mhc_post"]
    assert hc_sglang.uninstall() == {}


def test_sglang_install_skips_modules_this_version_lacks(fake_sglang):
    # the stand-in has no sglang.srt.layers.mhc (the older path): install() uses what there is
    replaced = hc_sglang.install()
    assert not any(k.startswith("sglang.srt.layers.") for k in replaced) and replaced


def check_absent(monkeypatch, adapter, package):
    if importlib.util.find_spec(package) is not None and package not in sys.modules:
        pytest.skip(f"the real {package} is installed")
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(adapter._patcher, "_absent_said", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert adapter.install() == {}
        assert adapter.install() == {}
    said = [w for w in caught if issubclass(w.category, RuntimeWarning) and "replaced nothing" in str(w.message)]
    assert len(said) == 1 and package.lower() in str(said[0].message).lower()
    assert adapter.uninstall() == {}


def test_sglang_absent_installs_nothing_and_says_so_once(monkeypatch):
    check_absent(monkeypatch, hc_sglang, "sglang")


def test_vllm_absent_installs_nothing_and_says_so_once(monkeypatch):
    check_absent(monkeypatch, hc_vllm, "vllm")


class CustomOp:
    """vLLM's CustomOp binds its forward when constructed."""

    def __init__(self):
        self._forward_method = self.forward_cuda

    def forward(self, *args, **kwargs):
        return self._forward_method(*args, **kwargs)


class MHCPreOp(CustomOp):
    def forward_cuda(self, residual, fn, hc_scale, hc_base, rms_eps, hc_pre_eps, hc_sinkhorn_eps,
                     hc_post_mult_value, sinkhorn_repeat, n_splits=1, norm_weight=None, norm_eps=0.0):
        return "engine"


class MHCPostOp(CustomOp):
    def forward_cuda(self, x, residual, post_layer_mix, comb_res_mix):
        return "engine"


class MHCFusedPostPreOp(CustomOp):
    def forward_cuda(self, x, residual, post_layer_mix, comb_res_mix, fn, hc_scale, hc_base, rms_eps, hc_pre_eps,
                     hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat, n_splits=1, tile_n=1, norm_weight=None,
                     norm_eps=0.0):
        return "engine"


class HCHeadOp(CustomOp):
    def forward_cuda(self, hidden_states, hc_fn, hc_scale, hc_base, rms_norm_eps, hc_eps):
        return "engine"


OPS = {"MHCPreOp": MHCPreOp, "MHCPostOp": MHCPostOp, "MHCFusedPostPreOp": MHCFusedPostPreOp, "HCHeadOp": HCHeadOp}


@pytest.fixture
def fake_vllm(monkeypatch):
    if importlib.util.find_spec("vllm") is not None and "vllm" not in sys.modules:
        pytest.skip("the real vLLM is installed")
    kernels = {n: engine_fn(n, f) for n, f in hc_vllm.KERNELS.items()}
    warmups = {n: engine_fn(n, f) for n, f in hc_vllm.WARMUPS.items()}
    delayed = engine_fn("mhc_pre_delayed_tilelang")
    ops = {name: type(name, (cls,), {"forward_cuda": cls.__dict__["forward_cuda"]}) for name, cls in OPS.items()}
    mods = add_modules(monkeypatch, {
        VL_KERNELS: {**kernels, "mhc_pre_delayed_tilelang": delayed},
        VL_PACKAGE: dict(kernels),  # the package re-exports the kernels (from .tilelang import *)
        VL_WARMUP: warmups,
        VL_KERNEL_WARMUP: {"deepseek_v4_mhc_warmup": warmups["deepseek_v4_mhc_warmup"]},
        VL_LAYERS: ops,
    })
    yield mods, {**kernels, **warmups}, ops
    hc_vllm.uninstall()


def test_vllm_install_replaces_functions_and_custom_op_forwards(fake_vllm):
    mods, originals, ops = fake_vllm
    adapters = {**hc_vllm.KERNELS, **hc_vllm.WARMUPS}
    replaced = hc_vllm.install()
    want = ({f"{VL_KERNELS}.{n}" for n in hc_vllm.KERNELS} | {f"{VL_PACKAGE}.{n}" for n in hc_vllm.KERNELS}
            | {f"{VL_WARMUP}.{n}" for n in hc_vllm.WARMUPS} | {f"{VL_KERNEL_WARMUP}.deepseek_v4_mhc_warmup"}
            | {f"{VL_LAYERS}.{c}.forward_cuda" for c in OPS})
    assert set(k for k in replaced if not k.startswith("torch.ops.")) == want
    for key in want - {f"{VL_LAYERS}.{c}.forward_cuda" for c in OPS}:
        module, name = key.rsplit(".", 1)
        assert replaced[key] is originals[name] and getattr(mods[module], name) is adapters[name]
    assert mods[VL_KERNELS].mhc_pre_delayed_tilelang.__name__ == "mhc_pre_delayed_tilelang"  # no counterpart
    for name, cls in ops.items():
        method = cls.__dict__["forward_cuda"]
        assert replaced[f"{VL_LAYERS}.{name}.forward_cuda"] is OPS[name].__dict__["forward_cuda"]
        assert method is not OPS[name].__dict__["forward_cuda"]
        assert inspect.signature(method) == inspect.signature(OPS[name].forward_cuda)  # vLLM's, defaults too

    wrapper = ops["MHCPreOp"].__dict__["forward_cuda"]
    assert hc_vllm.install() == replaced
    assert ops["MHCPreOp"].__dict__["forward_cuda"] is wrapper  # not wrapped twice

    restored = hc_vllm.uninstall()
    assert set(restored) == set(replaced)
    for name, cls in ops.items():
        assert cls.__dict__["forward_cuda"] is OPS[name].__dict__["forward_cuda"]
    assert mods[VL_PACKAGE].mhc_post_tilelang is originals["mhc_post_tilelang"]


def test_another_version_s_signature_is_left_alone(fake_vllm, monkeypatch, caplog):
    mods, _, _ = fake_vllm

    def hc_head_fused_kernel_tilelang(hs_flat, fn, hc_scale, hc_base, out, hidden_size, rms_eps, hc_eps, hc_mult):
        return "engine"  # an older vLLM: the caller passes the output buffer

    monkeypatch.setattr(mods[VL_KERNELS], "hc_head_fused_kernel_tilelang", hc_head_fused_kernel_tilelang)
    monkeypatch.setattr(mods[VL_PACKAGE], "hc_head_fused_kernel_tilelang", hc_head_fused_kernel_tilelang)
    with caplog.at_level("WARNING", logger="hcwarm.integrations"):
        replaced = hc_vllm.install()
    assert not any(k.endswith(".hc_head_fused_kernel_tilelang") for k in replaced)
    assert f"{VL_KERNELS}.mhc_pre_tilelang" in replaced
    assert mods[VL_KERNELS].hc_head_fused_kernel_tilelang is hc_head_fused_kernel_tilelang
    assert "hc_head_fused_kernel_tilelang takes (hs_flat, fn, hc_scale, hc_base, out" in caplog.text


def test_custom_op_method_keeps_the_engine_defaults_and_names():
    calls = []

    def adapter(hs_flat, fn, hc_scale, hc_base, rms_eps, hc_eps):
        calls.append((hs_flat, fn, hc_scale, hc_base, rms_eps, hc_eps))

    method = as_method(adapter, HCHeadOp.forward_cuda)
    method(None, 1, 2, 3, 4, rms_norm_eps=5, hc_eps=6)  # vLLM's names, mapped by position
    assert calls[-1] == (1, 2, 3, 4, 5, 6)

    seen = {}

    def pre(residual, fn, hc_scale, hc_base, rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value,
            sinkhorn_repeat, n_splits=1, norm_weight=None, norm_eps=1e-6):
        seen.update(norm_eps=norm_eps, n_splits=n_splits, norm_weight=norm_weight)

    forward = as_method(pre, MHCPreOp.forward_cuda)
    forward(None, *range(9), norm_weight="w")
    assert seen == {"norm_eps": 0.0, "n_splits": 1, "norm_weight": "w"}  # CustomOp's default 0.0, not 1e-6
    forward(None, *range(12))
    assert seen == {"norm_eps": 11, "n_splits": 9, "norm_weight": 10}
    assert as_method(pre, HCHeadOp.forward_cuda) is None  # not the same parameters: not patched


# The engines' signatures, written out from their sources.
SGLANG_SIGNATURES = {
    "mhc_pre": "(residual, fn, hc_scale, hc_base, rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value, "
               "sinkhorn_repeat, n_splits=1, n_splits_pre=32, *, norm_weight=None, norm_eps=None)",
    "mhc_post": "(x, residual, post_layer_mix, comb_res_mix)",
    "mhc_fused_post_pre": "(x, residual, post_layer_mix, comb_res_mix, fn, hc_scale, hc_base, rms_eps, hc_pre_eps, "
                          "hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat, n_splits=1, tile_n=1, *, "
                          "norm_weight=None, norm_eps=None)",
    "fused_hc_head": "(x, hc_fn, hc_scale, hc_base, norm_eps, hc_eps)",
    "get_mhc_pre_token_count_representatives": "(max_num_tokens, hc_hidden_size)",
    "prewarm_mhc_pre": "(residual, fn, hc_scale, hc_base, rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value, "
                       "sinkhorn_repeat, n_splits, n_splits_pre, norm_weight, norm_eps)",
}
VLLM_SIGNATURES = {
    "mhc_pre_tilelang": "(residual, fn, hc_scale, hc_base, rms_eps, hc_pre_eps, hc_sinkhorn_eps, "
                        "hc_post_mult_value, sinkhorn_repeat, n_splits=1, norm_weight=None, norm_eps=1e-06)",
    "mhc_pre_broadcast_tilelang": "(residual, fn, hc_scale, hc_base, rms_eps, hc_pre_eps, hc_sinkhorn_eps, "
                                  "hc_post_mult_value, sinkhorn_repeat, n_splits=1, norm_weight=None, "
                                  "norm_eps=1e-06, fn_broadcast=None)",
    "mhc_post_tilelang": "(x, residual, post_layer_mix, comb_res_mix)",
    "mhc_fused_post_pre_tilelang": "(x, residual, post_layer_mix, comb_res_mix, fn, hc_scale, hc_base, rms_eps, "
                                   "hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat, n_splits=1, "
                                   "tile_n=1, norm_weight=None, norm_eps=1e-06)",
    "hc_head_fused_kernel_tilelang": "(hs_flat, fn, hc_scale, hc_base, rms_eps, hc_eps)",
    "deepseek_v4_mhc_warmup": "(model, *, max_tokens, cudagraph_capture_sizes=None)",
    "register_deepseek_v4_mhc_warmup": "(model, *, vllm_config, include_broadcast, include_head)",
}


@pytest.mark.parametrize("module,signatures", [(hc_sglang, SGLANG_SIGNATURES), (hc_vllm, VLLM_SIGNATURES)])
def test_signatures_are_the_engines(module, signatures):
    for name, want in signatures.items():
        assert str(inspect.signature(getattr(module, name))) == want, name


def test_unequal_epsilons_are_refused_naming_both():
    with pytest.raises(EngineArgumentError, match="hc_pre_eps.*hc_sinkhorn_eps") as info:
        hc_sglang.mhc_pre(None, None, None, None, 1e-6, 1e-6, 1e-5, 2.0, 20)
    assert isinstance(info.value, ValueError) and isinstance(info.value, hcwarm.InvalidArgumentError)
    with pytest.raises(EngineArgumentError, match="hc_pre_eps.*hc_sinkhorn_eps"):
        hc_vllm.mhc_fused_post_pre_tilelang(None, None, None, None, None, None, None, 1e-6, 1e-6, 2e-6, 2.0, 20)
    with pytest.raises(EngineArgumentError, match="sinkhorn_repeat"):
        hc_vllm.mhc_pre_tilelang(None, None, None, None, 1e-6, 1e-6, 1e-6, 2.0, 0)
    with pytest.raises(EngineArgumentError, match="norm_eps: required"):
        hc_sglang.mhc_pre(None, None, None, None, 1e-6, 1e-6, 1e-6, 2.0, 20, norm_weight=object())


class FakePrewarm:
    def __init__(self):
        self.calls = []

    def __call__(self, config, **kwargs):
        self.calls.append((config, kwargs))
        hcwarm.model_config(config)  # the config dict is one hcwarm accepts
        return SimpleNamespace(max_num_tokens=kwargs["chunked_prefill_size"], keys=0, compiled=0,
                               loaded_from_disk=0, seconds=0.0, skipped="")


@pytest.fixture
def fake_prewarm(monkeypatch):
    fake = FakePrewarm()
    monkeypatch.setattr(hcwarm, "prewarm", fake)
    return fake


@pytest.mark.parametrize("chunked,budget", [(256, 256), (-1, 320), (0, 320), (None, 320)])
def test_sglang_prewarm_uses_the_schedule_budget(monkeypatch, fake_prewarm, chunked, budget):
    schedule = SimpleNamespace(chunked_prefill_size=chunked, max_prefill_tokens=320)
    add_modules(monkeypatch, {"sglang.srt.runtime_context": {"get_schedule": lambda: schedule}})
    residual = SimpleNamespace(shape=(1, 4, 1024), device="cpu")
    assert hc_sglang.prewarm_mhc_pre(residual, None, None, None, 1e-6, 1e-6, 1e-6, 2.0, 20, 1, 32, "w", 1e-6) is None
    (config, kwargs), = fake_prewarm.calls
    assert (config["hidden_size"], config["hc_mult"], config["hc_sinkhorn_iters"]) == (1024, 4, 20)
    assert kwargs == {"chunked_prefill_size": budget, "device": "cpu", "fused_norm": True}


def test_sglang_prewarm_without_a_budget_does_nothing(monkeypatch, fake_prewarm):
    schedule = SimpleNamespace(chunked_prefill_size=-1, max_prefill_tokens=0)
    add_modules(monkeypatch, {"sglang.srt.runtime_context": {"get_schedule": lambda: schedule}})
    residual = SimpleNamespace(shape=(1, 4, 1024), device="cpu")
    hc_sglang.prewarm_mhc_pre(residual, None, None, None, 1e-6, 1e-6, 1e-6, 2.0, 20, 1, 32, None, None)
    assert fake_prewarm.calls == []


class DeepseekV4DecoderLayer:
    def __init__(self, device="cuda", **extra):
        for p in ("attn", "ffn"):
            for w in ("fn", "scale", "base"):
                setattr(self, f"hc_{p}_{w}", SimpleNamespace(device=SimpleNamespace(type=device)))
        self.hidden_size, self.hc_mult, self.hc_eps, self.rms_norm_eps = 7168, 4, 1e-6, 1e-6
        self.hc_sinkhorn_iters, self.hc_post_alpha = 20, 2.0
        self.attn_norm = SimpleNamespace(variance_epsilon=1e-6)
        self.__dict__.update(extra)


def model_of(layer, model_type="deepseek_v4"):
    return SimpleNamespace(config=SimpleNamespace(model_type=model_type), modules=lambda: [object(), layer])


def test_vllm_warmup_prewarms_the_first_mhc_layer(fake_prewarm):
    layer = DeepseekV4DecoderLayer()
    hc_vllm.deepseek_v4_mhc_warmup(model_of(layer), max_tokens=2048, cudagraph_capture_sizes=[1, 2, 4])
    (config, kwargs), = fake_prewarm.calls
    assert (config["hidden_size"], config["hc_mult"]) == (7168, 4)
    assert kwargs == {"chunked_prefill_size": 2048, "device": layer.hc_attn_fn.device, "fused_norm": True}
    # CustomOp wrappers on the layer mean an unfused norm, as vLLM's warmup decides
    hc_vllm.deepseek_v4_mhc_warmup(model_of(DeepseekV4DecoderLayer(mhc_pre=object())), max_tokens=64)
    assert fake_prewarm.calls[-1][1]["fused_norm"] is False
    # gates: another model type, a CPU layer, an empty budget
    hc_vllm.deepseek_v4_mhc_warmup(model_of(layer, "llama"), max_tokens=64)
    hc_vllm.deepseek_v4_mhc_warmup(model_of(DeepseekV4DecoderLayer("cpu")), max_tokens=64)
    hc_vllm.deepseek_v4_mhc_warmup(model_of(layer), max_tokens=0)
    assert len(fake_prewarm.calls) == 2


def test_vllm_warmup_registration_prewarms_the_scheduler_budget(fake_prewarm):
    def cfg(enabled):
        return SimpleNamespace(kernel_config=SimpleNamespace(enable_jit_warmup=enabled),
                               scheduler_config=SimpleNamespace(max_num_batched_tokens=512))

    model = model_of(DeepseekV4DecoderLayer())
    hc_vllm.register_deepseek_v4_mhc_warmup(model, vllm_config=cfg(False), include_broadcast=True, include_head=True)
    assert fake_prewarm.calls == []
    hc_vllm.register_deepseek_v4_mhc_warmup(model, vllm_config=cfg(True), include_broadcast=False, include_head=False)
    assert fake_prewarm.calls[0][1]["chunked_prefill_size"] == 512


def test_sglang_representatives_are_hcwarm_s_sorted_ascending(monkeypatch):
    monkeypatch.setattr(hcwarm, "token_count_representatives", lambda m, k, num_sms=None: [m, 128, 64],
                        raising=False)
    assert hc_sglang.get_mhc_pre_token_count_representatives(4096, 16384) == (64, 128, 4096)
    assert hc_sglang.get_mhc_pre_token_count_representatives(0, 16384) == ()
    assert hc_sglang.get_mhc_pre_token_count_representatives(-1, 16384) == ()


def test_representatives_follow_hcwarm_s_rule():
    if not hasattr(hcwarm, "token_count_representatives"):
        pytest.skip("hcwarm.token_count_representatives is not in this build")
    reps = hc_sglang.get_mhc_pre_token_count_representatives(16384, 28672)
    assert reps == tuple(sorted(hcwarm.token_count_representatives(16384, 28672, num_sms=hc_sglang._device0_sms())))
    assert list(reps) == sorted(set(reps)) and reps[-1] == 16384
