"""Shared fixtures: an isolated kernel cache for the test run, the compiler memo, the reference, and
the gpu marker.

Tests marked `gpu` need PyTorch and a CUDA device and skip cleanly without them.
"""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))  # mhc_reference.py, for the test modules that import it


def pytest_configure(config):
    # Before hcwarm creates any context: a private cache, quiet logs.
    cache = os.path.join(config.rootpath if hasattr(config, "rootpath") else ROOT, "build-python", "pytest-cache")
    os.environ.setdefault("HCWARM_CACHE_DIR", os.environ.get("HCWARM_TEST_CACHE_DIR", cache))
    os.environ.setdefault("HCWARM_LOG_LEVEL", "warn")
    # A missed bucket compiles in the call instead of being served by the generic kernels
    # meanwhile: results in this process never depend on whether a background compile landed
    # (generic and specialized kernels agree within the tolerances, not bit for bit).
    os.environ.setdefault("HCWARM_TIERED", "0")
    # The CPU kernels' host compiler through tests/compiler_memo (its header says why), sharing
    # CTest's memo when the CMake tree is there.
    memo = os.path.join(ROOT, "build", "tests", "compiler-memo")
    if not os.path.isdir(os.path.dirname(memo)):
        memo = os.path.join(ROOT, "build-python", "compiler-memo")
    os.environ.setdefault("HCWARM_TEST_CXX_MEMO", memo)
    os.environ["PATH"] = os.path.join(ROOT, "tests", "compiler_memo") + os.pathsep + os.environ.get("PATH", "")


def _gpu_available():
    try:
        import torch
    except ImportError:
        return False, "PyTorch is not installed"
    if not torch.cuda.is_available():
        return False, "no CUDA device"
    return True, ""


def pytest_collection_modifyitems(config, items):
    ok, why = _gpu_available()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"gpu test: {why}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
