"""When an hcwarm.* call on torch tensors may skip PyTorch's dispatcher.

In eager mode on plain CPU or CUDA tensors with no mode active, hcwarm.hc_pre and
its siblings launch directly (_torch_launch), which saves the dispatcher's round
trip through Python. Anything PyTorch must see goes through torch.ops.hcwarm.*:
torch.compile tracing, tensor subclasses (FakeTensor, functional tensors), meta
tensors, and dispatch or function modes.
"""
from __future__ import annotations

from typing import Any

import torch

_Tensor = torch.Tensor
_is_compiling = torch.compiler.is_compiling
_dispatch_modes = getattr(torch._C, "_len_torch_dispatch_stack", lambda: 0)
_function_modes = getattr(torch._C, "_is_torch_function_mode_enabled", lambda: False)


def direct(x: Any) -> bool:
    """Whether a call whose residual is x may launch without the dispatcher."""
    # is_compiling first: under torch.compile it is a constant and nothing after it is traced.
    return (not _is_compiling() and type(x) is _Tensor and (x.is_cuda or x.is_cpu) and not _dispatch_modes()
            and not _function_modes())
