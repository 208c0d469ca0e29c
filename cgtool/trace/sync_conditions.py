"""The condition language of the sync table: what an aten op's arguments look like, as atoms, and whether
a table entry's conditions hold for them. Shared by the generator (tools/sync_table.py, on the GPU) and the
tracer (CPU run), so both describe an op's arguments the same way.

An atom is "<arg>:<feature>" over the op's schema argument names, e.g. "value:device" (a device tensor),
"value:number" (a Python number), "num_classes:default" (not given), "check_errors:true", "self:0d",
"self:numel>=4096". A condition is a list of clauses (any may hold); a clause is a list of atoms (all hold).
An empty clause holds always.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

import torch

Tensor = torch.Tensor
IsDevice = Callable[[Tensor], bool]
# The features of one call: arg name -> (kind, numel, 0-dim); kind in device/host/device-bool/host-bool/number/
# number-neg (a negative number, often a sentinel: one_hot's num_classes=-1)/true/false/none/default/tensors-device/tensors-host/other; numel is -1 for non-tensors. A Python-level call
# (no schema) names its arguments arg0, arg1, ... and its keywords by name; its arguments may also be python-list.
Features = dict[str, tuple[str, int, bool]]


def schema_names(func: Any) -> list[tuple[str, bool]]:
    """(name, keyword-only) of an OpOverload's schema arguments; [] when it has none (a Python-level API)."""
    schema = getattr(func, "_schema", None)
    if schema is None:
        return []
    return [(a.name, bool(a.kwarg_only)) for a in schema.arguments]


def features(func: Any, args: tuple, kwargs: dict, is_device: IsDevice) -> Features:
    """Describe each schema argument: (kind, numel, 0-dim)."""
    names = schema_names(func)
    out: Features = {}
    positional = [n for n, kw_only in names if not kw_only]
    given = dict(zip(positional, args))
    given.update(kwargs)
    if not names:  # a Python-level call (torch.nn.functional.one_hot): positions and keyword names
        for i, a in enumerate(args):
            out[f"arg{i}"] = _python_one(a, is_device)
        for k, a in kwargs.items():
            out[k] = _python_one(a, is_device)
        return out
    for name, _ in names:
        out[name] = _one(given[name], is_device) if name in given else ("default", -1, False)
    return out


def _python_one(v: Any, is_device: IsDevice) -> tuple[str, int, bool]:
    """_one for a Python-level call's argument, which may also be "python-list": Python data that torch turns into
    a tensor and copies to the device (an index `x[:, [0, 3]]`, a list or a tuple with a list in it)."""
    if isinstance(v, list) and v and not any(isinstance(x, Tensor) for x in v) or \
            isinstance(v, tuple) and any(isinstance(x, list) for x in v):
        return ("python-list", -1, False)
    return _one(v, is_device)


def _one(v: Any, is_device: IsDevice) -> tuple[str, int, bool]:
    if isinstance(v, Tensor):
        if v.dtype == torch.bool:  # a mask: indexing with it is data-dependent, with integers it is not
            return ("device-bool" if is_device(v) else "host-bool", v.numel(), v.dim() == 0)
        return ("device" if is_device(v) else "host", v.numel(), v.dim() == 0)
    if v is None:
        return ("none", -1, False)
    if isinstance(v, bool):
        return ("true" if v else "false", -1, False)
    if isinstance(v, (int, float)):
        return ("number-neg" if v < 0 else "number", -1, False)  # -1 often means "find it from the data"
    if isinstance(v, complex):
        return ("number", -1, False)
    tensors = [x for x in v if isinstance(x, Tensor)] if isinstance(v, (list, tuple)) else []
    if tensors and all(x is None or isinstance(x, Tensor) for x in v):  # a tensor list, or indices (None: a slice)
        kind = "tensors-device" if any(is_device(x) for x in tensors) else "tensors-host"
        if any(x.dtype == torch.bool for x in tensors):
            kind += "-bool"  # boolean masks among indices: aten.index sizes its output from the data
        return (kind, sum(x.numel() for x in tensors), False)
    return ("other", -1, False)


def atoms(feats: Features, thresholds: Mapping[str, Iterable[int]] | None = None) -> set[str]:
    """All atoms that hold for `feats`; size atoms only at the given per-argument thresholds."""
    out = set()
    for name, (kind, numel, zero_dim) in feats.items():
        out.add(f"{name}:{kind}")
        if kind == "number-neg":
            out.add(f"{name}:number")
        if kind.startswith(("device", "host")):
            out.add(f"{name}:tensor")
            if zero_dim:
                out.add(f"{name}:0d")
            else:
                out.add(f"{name}:nd")
        for k in (thresholds or {}).get(name, ()):
            if numel >= k:
                out.add(f"{name}:numel>={k}")
            elif numel >= 0:
                out.add(f"{name}:numel<{k}")
    return out


def holds(atom: str, feats: Features) -> bool:
    name, _, feature = atom.partition(":")
    if name not in feats:
        return feature == "default"
    kind, numel, zero_dim = feats[name]
    if feature.startswith("numel>="):
        return numel >= int(feature[7:])
    if feature.startswith("numel<"):
        return 0 <= numel < int(feature[6:])
    tensor = kind.startswith(("device", "host"))
    if feature == "number":
        return kind.startswith("number")
    if feature == "tensor":
        return tensor
    if feature == "0d":
        return tensor and zero_dim
    if feature == "nd":
        return tensor and not zero_dim
    return kind == feature


def matching_clause(conditions: list[list[str]], feats: Features) -> list[str] | None:
    """The first clause of `conditions` that holds for `feats`, else None."""
    for clause in conditions:
        if all(holds(a, feats) for a in clause):
            return clause
    return None


def describe(clause: list[str]) -> str:
    """A clause in words: "always", or "value is a device tensor and num_classes is not given"."""
    if not clause:
        return "always"
    return " and ".join(_atom_words(a) for a in clause)


_WORDS = {"device": "is a device tensor", "host": "is a host tensor", "device-bool": "is a device bool tensor",
          "host-bool": "is a host bool tensor", "number": "is a Python number", "number-neg": "is a negative Python number",
          "true": "is True", "false": "is False", "none": "is None", "default": "is not given",
          "tensor": "is a tensor", "0d": "is a 0-dim tensor", "nd": "is a tensor of 1+ dims",
          "tensors-device": "holds device tensors", "tensors-host": "holds host tensors only",
          "tensors-device-bool": "holds device tensors, a bool mask among them",
          "tensors-host-bool": "holds host tensors only, a bool mask among them", "other": "is given",
          "python-list": "holds a Python list (copied to the device as a tensor)"}


def _atom_words(atom: str) -> str:
    name, _, feature = atom.partition(":")
    if feature.startswith("numel"):
        return f"{name} has {feature.replace('numel', 'numel ')}"
    return f"{name} {_WORDS.get(feature, feature)}"
