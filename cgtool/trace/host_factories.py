"""Tensor factories that TorchFunctionMode never sees, made visible to the CPU run's tracer.

`torch.from_numpy`, `torch.frombuffer` and `torch.from_dlpack` build a tensor without going through
PyTorch's argument parser, so no TorchFunctionMode is called for them: on the CPU run a host table made from
NumPy in setup was taken for a device tensor, and its `.item()` for a sync (a CPU error the GPU refutes).
While the Tracer is entered on the CPU run these entry points are replaced by wrappers that dispatch through
`torch.overrides.handle_torch_function` whenever a mode is active, so the tracer's function mode receives them
under their own names ("torch.from_numpy", ...) and tags their output as a host tensor like any factory with
no device. Outside a mode the wrappers call the real function directly.
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

import torch
from torch.overrides import handle_torch_function

# (module, attribute) of each entry point; torch.utils.dlpack.from_dlpack is the same function as torch's
_ENTRY_POINTS = (("torch", "from_numpy"), ("torch", "frombuffer"), ("torch", "from_dlpack"),
                 ("torch.utils.dlpack", "from_dlpack"))


def _mode_active() -> bool:
    return torch._C._is_torch_function_mode_enabled()


def _wrap(real: Callable[..., Any], name: str) -> Callable[..., Any]:
    @functools.wraps(real)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _mode_active():
            return handle_torch_function(wrapper, (), *args, **kwargs)
        return real(*args, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__module__ = "torch"
    wrapper._cgtool_host_factory = True  # type: ignore[attr-defined]
    return wrapper


class HostFactories:
    """install() replaces the entry points (once per function object); uninstall() puts the real ones back."""

    def __init__(self) -> None:
        self.saved: list[tuple[Any, str, Any]] = []

    def install(self) -> None:
        wrappers: dict[int, Callable[..., Any]] = {}
        for module_name, attr in _ENTRY_POINTS:
            owner = sys.modules.get(module_name)
            real = getattr(owner, attr, None) if owner is not None else None
            if real is None or getattr(real, "_cgtool_host_factory", False):
                continue
            wrapper = wrappers.get(id(real))
            if wrapper is None:
                wrapper = wrappers[id(real)] = _wrap(real, attr)
            self.saved.append((owner, attr, real))
            setattr(owner, attr, wrapper)

    def uninstall(self) -> None:
        while self.saved:
            owner, attr, real = self.saved.pop()
            setattr(owner, attr, real)
