"""Tensor trees: name the tensors in outputs and state, snapshot/restore state, fill static inputs, compare.

Used by the replay check (eager and replay from identical state) and by static-input handling.
torch is imported lazily: this module is only used inside the worker.
"""

from __future__ import annotations

import math
from typing import Any, Iterator

from cgtool.model.report import TensorDiff

# (rtol, atol) by dtype for replay-versus-eager. Replay runs the same kernels as eager, so results are
# usually bit-identical; the slack covers library kernels whose reduction order depends on workspace.
TOLERANCES = {
    "torch.float64": (1e-7, 1e-7),
    "torch.float32": (1e-4, 1e-5),
    "torch.float16": (1e-2, 1e-3),
    "torch.bfloat16": (5e-2, 1e-2),
}


def named_tensors(value: Any, prefix: str, _seen: set[int] | None = None) -> Iterator[tuple[str, Any]]:
    """Every tensor reachable in `value` with a readable name: containers, modules, optimizers."""
    import torch

    seen = set() if _seen is None else _seen
    if id(value) in seen:
        return
    if isinstance(value, torch.Tensor):
        seen.add(id(value))
        yield prefix, value
    elif isinstance(value, torch.nn.Module):
        seen.add(id(value))
        for name, t in list(value.named_parameters()) + list(value.named_buffers()):
            if id(t) not in seen and t is not None:
                seen.add(id(t))
                yield f"{prefix}.{name}", t
    elif isinstance(value, torch.optim.Optimizer):
        seen.add(id(value))
        index = {id(p): i for i, p in enumerate(p for g in value.param_groups for p in g["params"])}
        for p, st in value.state.items():
            for key, t in st.items():
                if isinstance(t, torch.Tensor) and id(t) not in seen:
                    seen.add(id(t))
                    yield f"{prefix}.state[{index.get(id(p), '?')}].{key}", t
        # hyperparameters held as tensors (a capturable optimizer's lr; betas as a tuple of tensors): a scheduler
        # writes an lr tensor in place, so they are state a step changes like any other
        for i, group in enumerate(value.param_groups):
            for key, v in group.items():
                if key == "params":
                    continue
                named = [(f"[{j}]", t) for j, t in enumerate(v)] if isinstance(v, (tuple, list)) else [("", v)]
                for suffix, t in named:
                    if isinstance(t, torch.Tensor) and id(t) not in seen:
                        seen.add(id(t))
                        yield f"{prefix}.param_groups[{i}].{key}{suffix}", t
    elif isinstance(value, dict):
        seen.add(id(value))
        for k, v in value.items():
            yield from named_tensors(v, f"{prefix}[{k!r}]" if prefix else str(k), seen)
    elif isinstance(value, (list, tuple)):
        seen.add(id(value))
        for i, v in enumerate(value):
            yield from named_tensors(v, f"{prefix}[{i}]", seen)
    elif hasattr(value, "__dict__") and not isinstance(value, type) and type(value).__module__ != "builtins":
        # a user object holding a model/optimizer (e.g. a Trainer); look one level into its attributes
        seen.add(id(value))
        for k, v in vars(value).items():
            if _holds_tensors(v):
                yield from named_tensors(v, f"{prefix}.{k}", seen)


def _holds_tensors(v: Any) -> bool:
    import torch

    return isinstance(v, (torch.Tensor, torch.nn.Module, torch.optim.Optimizer, dict, list, tuple))


def state_tensors(state: Any) -> list[tuple[str, Any]]:
    """The persistent tensors a step may update: parameters, buffers, optimizer state, plain tensors."""
    return [(n, t) for n, t in named_tensors(state, "state") if not t.is_sparse]


def snapshot(pairs: list[tuple[str, Any]]) -> list[Any]:
    return [t.detach().clone() for _, t in pairs]


def restore(pairs: list[tuple[str, Any]], saved: list[Any]) -> None:
    import torch

    with torch.no_grad():
        for (_, t), s in zip(pairs, saved):
            t.copy_(s)


def copy_inputs(static: Any, fresh: Any, prefix: str = "inputs") -> list[str]:
    """Copy fresh inputs into the captured (static) input tensors in place; return what could not be copied."""
    import torch

    problems: list[str] = []
    if isinstance(static, torch.Tensor):
        if not isinstance(fresh, torch.Tensor):
            return [f"{prefix}: captured a tensor, got {type(fresh).__name__}"]
        if static.shape != fresh.shape:
            return [f"{prefix}: shape {tuple(fresh.shape)} differs from the captured {tuple(static.shape)}"]
        if static.dtype != fresh.dtype:
            return [f"{prefix}: dtype {fresh.dtype} differs from the captured {static.dtype}"]
        with torch.no_grad():
            static.copy_(fresh)
        return []
    if isinstance(static, dict) and isinstance(fresh, dict):
        if set(static) != set(fresh):
            return [f"{prefix}: keys {sorted(fresh)} differ from the captured {sorted(static)}"]
        for k in static:
            problems += copy_inputs(static[k], fresh[k], f"{prefix}[{k!r}]")
        return problems
    if isinstance(static, (list, tuple)) and isinstance(fresh, (list, tuple)):
        if len(static) != len(fresh):
            return [f"{prefix}: {len(fresh)} items, captured {len(static)}"]
        for i, (s, f) in enumerate(zip(static, fresh)):
            problems += copy_inputs(s, f, f"{prefix}[{i}]")
        return problems
    try:
        same = static is fresh or bool(static == fresh)
    except Exception:  # arrays, objects without a plain truth value
        same = False
    if not same:
        return [f"{prefix}: the value {fresh!r} differs from the captured {static!r}; a Python value is baked into the graph"]
    return []


# Replay may differ from eager by this many times what two eager runs differ by: nondeterministic kernels
# (atomics in backward, cuDNN's algorithm choice) make eager itself vary, and an optimizer such as Adam
# amplifies that for parameters with tiny gradients (seen on a ViT and a ResNet-18 training step: 2e-5).
NOISE_FACTOR = 4.0
# ... but only noise that is small against what the step does: two eager runs that differ by more than this share
# of a state tensor's update in the step (or of an output's largest value, OUTPUT_NOISE_LIMIT) did not differ by
# rounding but by state the snapshot does not restore (a Python counter, a cache object): a real replay problem.
STATE_NOISE_LIMIT = 0.1
OUTPUT_NOISE_LIMIT = 1e-3


def rounding_noise(noise_abs: float, scale: float, limit: float) -> float:
    """`noise_abs` when it is small enough against `scale` to be rounding, else 0 (no slack)."""
    return noise_abs if 0 < noise_abs <= limit * scale else 0.0


def compare(name: str, eager: Any, replay: Any, noise_abs: float = 0.0, slack: float = 0.0) -> TensorDiff:
    """Max abs/rel error of replay against eager, and whether it is within the dtype's tolerance or within
    NOISE_FACTOR times `slack` (the rounding noise of two eager runs, rounding_noise; `noise_abs` is the
    measured difference, recorded either way)."""
    import torch

    shape = tuple(eager.shape)
    dtype = str(eager.dtype)
    if tuple(replay.shape) != shape:
        return TensorDiff(name, shape, dtype, math.inf, math.inf, False)
    if not (eager.is_floating_point() or eager.is_complex()):
        equal = bool(torch.equal(eager, replay))
        diff = 0.0 if equal else float((eager.long() - replay.long()).abs().max().item()) if eager.numel() else 0.0
        return TensorDiff(name, shape, dtype, diff, 0.0 if equal else math.inf, equal)
    if eager.numel() == 0:
        return TensorDiff(name, shape, dtype, 0.0, 0.0, True)
    e, r = eager.detach().double(), replay.detach().double()
    both_nan = torch.isnan(e) & torch.isnan(r)
    d = (e - r).abs().masked_fill(both_nan, 0.0)
    rel = d / e.abs().clamp_min(1e-12)
    max_abs = float(d.max().item())
    max_rel = float(rel.masked_fill(d == 0, 0.0).max().item())
    rtol, atol = TOLERANCES.get(dtype, (1e-4, 1e-5))
    ok = bool(torch.allclose(e, r, rtol=rtol, atol=atol, equal_nan=True)) or (
        slack > 0 and max_abs <= NOISE_FACTOR * slack)
    return TensorDiff(name, shape, dtype, max_abs, max_rel, ok, noise_abs)


def max_abs_diff(a: Any, b: Any) -> float:
    """The largest absolute difference of two tensors of one shape (0 for equal or non-float ones)."""
    import torch

    if tuple(a.shape) != tuple(b.shape) or a.numel() == 0:
        return 0.0
    if not (a.is_floating_point() or a.is_complex()):
        return 0.0 if bool(torch.equal(a, b)) else math.inf
    d = (a.detach().double() - b.detach().double()).abs()
    d = d.masked_fill(torch.isnan(a) & torch.isnan(b), 0.0)
    return float(d.max().item())


def clone_tree(value: Any) -> list[tuple[str, Any]]:
    """Detached clones of every tensor in a step's output, with names like output[0]."""
    return [(n, t.detach().clone()) for n, t in named_tensors(value, "output")]
