"""Which tensors (and Python numbers) an op or call carries, and their dtype/device names, interned: the argument
scan shared by the aten half (cgtool/trace/op_recorder.py) and the Python-level half (call_recorder.py)."""

from __future__ import annotations

import weakref
from typing import Any

import torch

Tensor = torch.Tensor

# A lazy module's parameter before its first forward (nn.LazyLinear): it has no shape yet, and reading one raises;
# such a tensor is not recorded as an argument (it takes no part in any computation until it is materialized).
LAZY = (torch.nn.parameter.UninitializedParameter, torch.nn.parameter.UninitializedBuffer)

_DTYPE_NAMES: dict[Any, str] = {}
_DEVICE_NAMES: dict[int, str] = {-1: "cpu"}


def dtype_name(dt: Any) -> str:
    n = _DTYPE_NAMES.get(dt)
    if n is None:
        n = _DTYPE_NAMES[dt] = str(dt).replace("torch.", "")
    return n


def device_name(t: Tensor) -> str:
    i = t.get_device()
    n = _DEVICE_NAMES.get(i)
    if n is None:
        n = _DEVICE_NAMES[i] = str(t.device)
    return n


def scan_call(args: tuple, kwargs: dict) -> tuple[list[Tensor], list[Any]]:
    """Tensor arguments and Python numbers (one level deep; slices count by their bounds)."""
    tensors: list[Tensor] = []
    numbers: list[Any] = []
    for a in (*args, *kwargs.values()) if kwargs else args:
        ta = type(a)
        if ta is int or ta is float:
            numbers.append(a)
        elif isinstance(a, Tensor):
            if not isinstance(a, LAZY):
                tensors.append(a)
        elif ta is list or ta is tuple:
            for b in a:
                tb = type(b)
                if tb is int or tb is float:
                    numbers.append(b)
                elif tb is slice:
                    numbers.append((b.start, b.stop, b.step))
                elif isinstance(b, Tensor) and not isinstance(b, LAZY):
                    tensors.append(b)
        elif ta is slice:
            numbers.append((a.start, a.stop, a.step))
    return tensors, numbers


def tensor_args(args: tuple, kwargs: dict) -> list[Tensor]:
    """The tensor arguments (one level deep), uninitialized lazy parameters left out (they have no shape)."""
    out = []
    for a in args:
        if isinstance(a, Tensor):
            out.append(a)
        elif type(a) is list or type(a) is tuple:
            for b in a:
                if isinstance(b, Tensor):
                    out.append(b)
    if kwargs:
        for a in kwargs.values():
            if isinstance(a, Tensor):
                out.append(a)
    return [t for t in out if not isinstance(t, LAZY)] if any(isinstance(t, LAZY) for t in out) else out


def tensors_in(value: Any) -> list[Tensor]:
    """The tensors an op or call returned: itself, or those of a list or tuple."""
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for t in value if isinstance(t, Tensor)]
    return []


def remember(table: dict[int, tuple], t: Tensor, *extra: Any) -> None:
    """table[id(t)] = (weakref to t, *extra), dropped when t dies (a later tensor may reuse its id: the entry is
    only valid while its weakref still gives t)."""
    key = id(t)

    def drop(ref: weakref.ref, key: int = key) -> None:
        e = table.get(key)
        if e is not None and e[0] is ref:
            del table[key]

    table[key] = (weakref.ref(t, drop), *extra)


def recall(table: dict[int, tuple], t: Tensor) -> tuple | None:
    """The entry remember() made for t (weakref first), or None (never remembered, or another tensor's old id)."""
    entry = table.get(id(t))
    return entry if entry is not None and entry[0]() is t else None
