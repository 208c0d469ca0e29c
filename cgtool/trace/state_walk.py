"""Walks of setup's state for the Tracer's state watch (trace/state_watch.py): the tensors reachable from the
step's state arguments (state_tensors: CG406's rebinds) and the Python values (host_values: CG408's changes). One
walk, _reachable, serves both: dict entries, list/tuple/deque items and a user object's attributes, _MAX_DEPTH deep,
each object once; a module's children are the walk's own (its tensors; the attributes its class adds); torch's own
objects are not walked (they keep their own state; CG402 reads the numbers they pass on)."""

from __future__ import annotations

import sys
import types
from collections import deque
from itertools import islice
from typing import Any, Callable, Iterator, NamedTuple

import torch

Tensor = torch.Tensor

_MAX_DEPTH = 3  # containers below the step's arguments: state['ema'][0] is depth 2
_MAX_ENTRIES = 1000  # per container
_MAX_LEAVES = 100_000  # tensors (or Python values) one walk yields at most

_SCALARS = (bool, int, float, str, np.generic) if (np := sys.modules.get("numpy")) else (bool, int, float, str)
_SIZED = (list, dict, set, deque)  # containers whose length host_values follows
# a module's own attributes (nn.Module's __init__ sets them; `training` moves with train()/eval(), not with steps)
_MODULE_OWN = frozenset(vars(torch.nn.Module()))
# torch's objects that keep their own state, the user's subclasses of them included (a custom warmup scheduler)
_TORCH_STATEFUL = (torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler, torch.amp.GradScaler)

Node = tuple[str, Any, int]  # (path, value, depth)


class HostValue(NamedTuple):
    """A Python value of the state as host_values saw it: `shown` for people, `size` a container's length (None for
    a number, flag or string), `value` the object itself."""

    shown: str
    size: int | None
    value: Any


def state_tensors(roots: list[tuple[str, Any]]) -> Iterator[tuple[str, Tensor]]:
    """(path, tensor) for every tensor reachable from the roots: modules (parameters, buffers, tensor
    attributes, their submodules), dict and list entries and a user object's attributes, _MAX_DEPTH deep."""
    yield from islice(((path, v) for path, v, _ in _reachable(roots, _module_tensors) if isinstance(v, Tensor)),
                      _MAX_LEAVES)


def host_values(roots: list[tuple[str, Any]]) -> Iterator[tuple[str, HostValue]]:
    """(path, HostValue) for the Python state reachable from the roots: the length of each list, dict, set and deque
    ("len 3"), and each number, flag or string held in one of them, in a tuple, in a user object's attributes or in
    the attributes a module of a class not torch's adds to nn.Module's (`self.calls`). Tensors are state_tensors'."""
    def values() -> Iterator[tuple[str, HostValue]]:
        for path, v, depth in _reachable(roots, _module_attributes):
            if isinstance(v, _SIZED):
                yield path, HostValue(f"len {len(v)}", len(v), v)
            elif isinstance(v, _SCALARS) and depth > 0:  # the step's own arguments are passed by value
                yield path, HostValue(_shown(v), None, v)

    yield from islice(values(), _MAX_LEAVES)


def new_tensors(value: Any, before: int) -> list[Tensor]:
    """The tensors a container that grew from `before` entries gained: in a list's or deque's new items, a dict's
    last values (insertion order), one level into a new item that is itself a container (`{"loss": t}`)."""
    if isinstance(value, dict):
        new = list(islice(reversed(list(value.values())), max(0, len(value) - before)))
    elif isinstance(value, (list, deque)):
        new = list(value)[before:] if len(value) > before else []
    else:
        return []
    found: list[Tensor] = []
    for v in new[:_MAX_ENTRIES]:
        inner = v.values() if isinstance(v, dict) else v if isinstance(v, (list, tuple)) else (v,)
        found += [t for t in inner if isinstance(t, Tensor)]
    return found


def _reachable(roots: list[tuple[str, Any]], module_children: Callable[[str, Any, int, set[int]], list[Node]]
               ) -> Iterator[Node]:
    """Every value reachable from the roots, as (path, value, depth): a leaf (a tensor, a number, a flag, a string)
    as it is met, an object once (by id), _MAX_DEPTH deep, then its children: a module's from
    `module_children(path, module, depth, seen)` (next, in their order), another object's from _children. An
    object that raises when read is left out (a dead weakref proxy, an attribute that raises)."""
    seen: set[int] = set()
    stack: list[Node] = [(name, value, 0) for name, value in reversed(roots)]
    while stack:
        path, value, depth = stack.pop()
        try:
            if value is None:
                continue
            if isinstance(value, (Tensor, *_SCALARS)):
                yield path, value, depth
                continue
            if id(value) in seen or depth > _MAX_DEPTH:
                continue
            seen.add(id(value))
            if isinstance(value, torch.nn.Module):
                stack.extend(reversed(module_children(path, value, depth, seen)))
                continue
            yield path, value, depth
            stack.extend(_children(path, value, depth))
        except Exception:  # noqa: BLE001 - the user's objects may raise on any access: leave that one out
            continue


def _module_tensors(path: str, module: Any, depth: int, seen: set[int]) -> list[Node]:
    """A module's parameters, buffers and tensor attributes, its submodules' included."""
    return [(f"{prefix}.{k}", v, depth + 1) for prefix, m in module.named_modules(prefix=path)
            for group in (m._parameters, m._buffers, m.__dict__)
            for k, v in islice(group.items(), _MAX_ENTRIES) if isinstance(v, Tensor)]


def _module_attributes(path: str, module: Any, depth: int, seen: set[int]) -> list[Node]:
    """The attributes that modules of classes not torch's (the module and its submodules) add to nn.Module's own;
    each such submodule is then seen (not walked again from another path)."""
    out: list[Node] = []
    for prefix, m in module.named_modules(prefix=path):
        if _torch_own(m):
            continue
        seen.add(id(m))
        out += [(f"{prefix}.{k}", v, depth + 1) for k, v in islice(vars(m).items(), _MAX_ENTRIES)
                if k not in _MODULE_OWN and not isinstance(v, torch.nn.Module)]
    return out


def _children(path: str, value: Any, depth: int) -> list[Node]:
    """(path, value, depth) of a dict's entries (str and int keys), a list's, tuple's or deque's items, a user
    object's attributes; none for anything else."""
    if isinstance(value, dict):
        return [(f"{path}[{k!r}]", v, depth + 1) for k, v in islice(value.items(), _MAX_ENTRIES)
                if isinstance(k, (str, int))]
    if isinstance(value, (list, tuple, deque)):
        return [(f"{path}[{i}]", v, depth + 1) for i, v in enumerate(islice(value, _MAX_ENTRIES))]
    if _user_object(value):
        return [(f"{path}.{k}", v, depth + 1) for k, v in islice(vars(value).items(), _MAX_ENTRIES)
                if not k.startswith("__")]
    return []


def _shown(value: Any) -> str:
    """A Python value as a HostChange shows it: repr, at most 80 characters (a long string is not copied whole)."""
    if isinstance(value, str):
        return repr(value[:80])
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**80:
        return f"<int of {value.bit_length()} bits, ending {value % 10**12}>"
    item = getattr(value, "item", None)  # a numpy scalar: as the number it holds
    return repr(item() if callable(item) else value)[:80]


def _torch_own(value: Any) -> bool:
    """An object of torch's own classes (torch.*, not a package named torch_something or torchvision)."""
    module = type(value).__module__ or ""
    return module == "torch" or module.startswith("torch.")


def _user_object(value: Any) -> bool:
    """An instance of a class of the user's or a library's (a Trainer, an EMA helper), not torch's own object
    (an optimizer, a GradScaler), nor cgtool's stand-in for one (the CPU run's CUDA events and streams: on the GPU
    they are torch's), a module, a class or a function."""
    if isinstance(value, (type, types.ModuleType, types.FunctionType, types.MethodType, *_TORCH_STATEFUL)):
        return False
    module = type(value).__module__ or ""
    return hasattr(value, "__dict__") and module != "builtins" and not _torch_own(value) \
        and not module.startswith("cgtool.")
