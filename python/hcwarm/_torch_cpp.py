"""The C++ operator library (python/src/torch_ops): torch.ops.hcwarm.* without Python in a call.

`pip install .` builds it when PyTorch is importable at build time, against that
PyTorch's C++ ABI; libhcwarm_torch_ops.txt beside it records the PyTorch and hcwarm
versions it was built for. It is loaded only when both match the running ones
(a mismatched library could load and then misbehave), and when
HCWARM_TORCH_CPP_OPS is not 0; otherwise torch.ops.hcwarm.* are the package's
Python operators (_torch_ops), with the same schemas. `reason` says why not.
"""
from __future__ import annotations

import ctypes
import os
from typing import List, Optional

import torch

from . import _core

_HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY = os.path.join(_HERE, "libhcwarm_torch_ops.so")
_VERSIONS = os.path.join(_HERE, "libhcwarm_torch_ops.txt")

_lib: Optional[ctypes.CDLL] = None
reason = "not loaded yet"


def _built_for() -> dict:
    with open(_VERSIONS, encoding="utf-8") as f:
        return dict(line.split(" ", 1) for line in f.read().splitlines() if " " in line)


def load() -> bool:
    """Loads and binds the library once; False (with `reason`) where the Python operators serve."""
    global _lib, reason
    if _lib is not None:
        return True
    if not _core.torch_cpp_ops_enabled():
        reason = "HCWARM_TORCH_CPP_OPS=0"
        return False
    if not os.path.exists(LIBRARY):
        reason = "not built (PyTorch was not importable when the package was built)"
        return False
    try:
        built = _built_for()
    except (OSError, ValueError) as e:
        reason = f"{_VERSIONS}: {e}"
        return False
    if built.get("torch") != torch.__version__ or built.get("hcwarm") != _core.__version__:
        reason = (f"built for PyTorch {built.get('torch')} and hcwarm {built.get('hcwarm')}, running PyTorch "
                  f"{torch.__version__} and hcwarm {_core.__version__}; rebuild the package to use it")
        return False
    try:
        lib = ctypes.CDLL(LIBRARY)  # its static initializers define torch.ops.hcwarm.*
    except OSError as e:
        reason = f"{LIBRARY} failed to load: {e}"
        return False
    if lib.hcwarm_torch_ops_bind(ctypes.c_void_p(_core.torch_bridge())) != 0:  # pragma: no cover - versions checked
        raise RuntimeError(f"{LIBRARY} refused hcwarm._core's table: built by another hcwarm build")
    lib.hcwarm_torch_ops_called.restype = ctypes.c_uint32
    lib.hcwarm_torch_ops_names.restype = ctypes.c_char_p
    _lib, reason = lib, ""
    return True


def names() -> List[str]:
    """The library's operators, in the order of called()'s bits."""
    assert _lib is not None
    return _lib.hcwarm_torch_ops_names().decode().split(",")


def called() -> int:
    """Bit i set: operator names()[i] has run in this process."""
    assert _lib is not None
    return int(_lib.hcwarm_torch_ops_called())
