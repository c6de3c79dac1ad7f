"""One op context per device, shared by every call in the process.

A context owns the device handle, the JIT runtime (with its disk cache) and the
ops. The first call or prewarm on a device creates it; settings given then
(cache_dir, strict_warmup, ...) stay for the process.
"""
from __future__ import annotations

import threading
from typing import Any, Dict, Optional, Tuple

from . import _core

_lock = threading.Lock()
_contexts: Dict[Tuple[str, int], _core.Context] = {}
_settings: Dict[Tuple[str, int], Dict[str, Any]] = {}


def parse_device(device: Any) -> Tuple[str, int]:
    """("cpu", 0) or ("cuda", ordinal) from None, "cpu", "cuda", "cuda:1", an int or a torch.device."""
    if device is None:
        torch = _torch_if_loaded()
        if torch is not None and torch.cuda.is_available():
            return "cuda", torch.cuda.current_device()
        return (_core.default_backend(), 0)
    if isinstance(device, int) and not isinstance(device, bool):
        if device < 0:
            raise ValueError(f"device: ordinal {device} is negative")
        return "cuda", device
    kind = getattr(device, "type", None)
    if kind is not None:  # torch.device
        index = getattr(device, "index", None)
        if kind == "cuda" and index is None:
            torch = _torch_if_loaded()
            index = torch.cuda.current_device() if torch is not None else 0
        return _checked(kind, index or 0, device)
    if isinstance(device, str):
        name, _, index = device.partition(":")
        if index and not index.isdigit():
            raise ValueError(f"device: {device!r} is not 'cpu', 'cuda' or 'cuda:N'")
        if name == "cuda" and not index:
            torch = _torch_if_loaded()
            return "cuda", (torch.cuda.current_device() if torch is not None and torch.cuda.is_available() else 0)
        return _checked(name, int(index) if index else 0, device)
    raise TypeError(f"device: expected None, 'cpu', 'cuda[:N]', an int or a torch.device, got {type(device).__name__}")


def _checked(kind: str, index: int, original: Any) -> Tuple[str, int]:
    if kind not in ("cpu", "cuda"):
        raise ValueError(f"device: {original!r} is not a CPU or CUDA device")
    if kind == "cpu" and index != 0:
        raise ValueError(f"device: {original!r}: the CPU is device 0")
    return kind, index


def _torch_if_loaded():
    import sys

    return sys.modules.get("torch")


def get_context(device: Any = None, **settings: Any) -> _core.Context:
    """The shared context of a device, created on first use with `settings`
    (cache_dir, num_sms, strict_warmup, jit, variant, jobs, progress). Asking
    again with different settings is an error: they are fixed per process."""
    key = parse_device(device)
    given = {k: v for k, v in settings.items() if v is not None}
    with _lock:
        ctx = _contexts.get(key)
        if ctx is None:
            ctx = _core.Context(backend=key[0], device=key[1], **given)
            _contexts[key] = ctx
            _settings[key] = given
            return ctx
        before = _settings[key]
        clash = {k: (before.get(k), v) for k, v in given.items() if before.get(k) != v}
        if clash:
            detail = ", ".join(f"{k}={old!r} (now {new!r})" for k, (old, new) in clash.items())
            raise ValueError(f"the hcwarm context of {key[0]}:{key[1]} already exists with {detail}; "
                             "settings are fixed by the first call on a device")
        return ctx


def existing_contexts() -> Dict[Tuple[str, int], _core.Context]:
    with _lock:
        return dict(_contexts)
