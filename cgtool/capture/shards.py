"""The replay check's view of a rank's state: local shards.

Under FSDP2 and DTensor tensor parallelism the parameters, their gradients and the optimizer's state are
DTensors. Comparing or copying them as DTensors runs DTensor's sharding propagation (and collectives) for
every `clone`, `allclose` or `.max()`, which fails (`aten.allclose`: sharding propagation failed) or
issues collectives outside the step; `copy.deepcopy` of them fails with `CUDA error: invalid argument`.
What a rank computes is its local shard: `DTensor.to_local()` is a view of it (writing into it writes the
DTensor's storage), so snapshot, restore and compare all run on local tensors, with no collective.

On a rank (a process group is up) the gradients of the parameters are state too: each parameter's `.grad`
at the start of the check, restored with the rest. A step that replaces its gradients (`zero_grad()` with
`set_to_none=True`, the default) leaves the captured gradient tensors behind: those are not compared
(`ShardState.replaced`).
"""

from __future__ import annotations

from typing import Any

from cgtool.capture.tensors import named_tensors, state_tensors


def is_dtensor(t: Any) -> bool:
    return type(t).__name__ == "DTensor" and hasattr(t, "to_local")


def is_unwaited(t: Any) -> bool:
    """A functional collective's result not waited yet (torch.distributed._functional_collectives'
    AsyncCollectiveTensor: DTensor's redistributions, RowwiseParallel's local output): its wait runs on first use."""
    return type(t).__name__ == "AsyncCollectiveTensor" and not getattr(t, "completed", True)


def local(t: Any, wait: bool = True) -> Any:
    """The rank's local tensor of a DTensor (a view: in-place writes reach the DTensor); any other tensor as is.
    An unwaited AsyncCollectiveTensor is waited (`wait`), or read as its buffer: the captured step's output,
    whose wait was never captured — waiting on the capture's work after a replay fails with `CUDA error:
    invalid argument` (measured, 2x H200, torch 2.11), while the buffer holds what the replay computed."""
    if is_unwaited(t):
        return t.trigger_wait() if wait else t.elem
    if not is_dtensor(t):
        return t
    import torch

    with torch.no_grad():
        return t.to_local()


def local_clone_tree(value: Any, wait: bool = True) -> list[tuple[str, Any]]:
    """Detached clones of the local tensors of a step's output, named like output[0] (`wait`: see `local`)."""
    return [(n, local(t, wait).detach().clone()) for n, t in named_tensors(value, "output")]


def unwaited_outputs(value: Any) -> list[str]:
    """Names of the output tensors whose collective was not waited inside the step (see `local`)."""
    return [n for n, t in named_tensors(value, "output") if is_unwaited(t)]


def _on_a_rank() -> bool:
    try:
        import torch.distributed as dist

        return dist.is_available() and dist.is_initialized()
    except ImportError:
        return False


def _parameters(state: Any) -> list[tuple[str, Any]]:
    """Every parameter reachable in `state` (modules, also inside containers), named as state_tensors names them."""
    import torch

    return [(n, t) for n, t in named_tensors(state, "state") if isinstance(t, torch.nn.Parameter)]


class ShardState:
    """The persistent tensors of a step as local tensors: parameters, buffers, optimizer state, plain tensors,
    and on a rank (or with DTensor parameters) each parameter's gradient."""

    def __init__(self, state: Any) -> None:
        whole = state_tensors(state)
        self.pairs: list[tuple[str, Any]] = [(n + (" (local shard)" if is_dtensor(t) else ""), local(t))
                                             for n, t in whole]
        params = _parameters(state)
        self._grads: list[tuple[str, Any, Any]] = []  # (name, parameter, its .grad object at the start)
        if params and (_on_a_rank() or any(is_dtensor(p) for _, p in params)):
            for name, p in params:
                if p.grad is not None and not p.grad.is_sparse:
                    self._grads.append((f"{name}.grad", p, p.grad))
                    self.pairs.append((f"{name}.grad" + (" (local shard)" if is_dtensor(p.grad) else ""),
                                       local(p.grad)))

    def replaced(self) -> set[str]:
        """Names (as in `pairs`) of gradients the step replaced by new tensors (set to None and made again):
        what the captured graph writes is no longer the parameter's `.grad`, so comparing them says nothing."""
        names = {n for n, _ in self.pairs}
        out: set[str] = set()
        for name, p, g in self._grads:
            if p.grad is not g:
                out.update(x for x in (name, f"{name} (local shard)") if x in names)
        return out
