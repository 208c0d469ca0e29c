"""Tensors of setup's state and of the step's inputs that the CPU run never saw made (CPU run only).

The CPU run tells a host tensor from a device tensor by watching where each one is made (a factory with no
device, `.cpu()`, ...): what it did not see made it takes for a device tensor. Some tensors are made where no
TorchFunctionMode looks: in another thread (modes are per thread: a prefetching loader's worker, a thread
pool), or by a C extension. Whether such a tensor is on the GPU is something the CPU cannot decide, so a sync
found on it (its `.item()`, a mask index over it) is said as a warning that names the tensor, not an error
that a GPU run might refute.

During setup() and inputs() every tensor a call returns is noted (`note`); at the end of each, the tensors
reachable from what it returned that are neither noted nor known host tensors become "unsure" (`mark`), by
path. In the step an op over unsure tensors (and host tensors) makes unsure tensors too (`origin_of`, `tag`).
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import torch

from cgtool.trace.tensor_args import recall, remember, tensors_in

Tensor = torch.Tensor


class UnseenOrigin:
    def __init__(self) -> None:
        self.seen: dict[int, weakref.ref] | None = None  # during setup() / inputs(): tensors calls returned
        self.unsure: dict[int, tuple[weakref.ref, str]] = {}  # id -> (ref, path in setup's state or inputs)

    # ---- setup and inputs ---------------------------------------------------------------------------
    def start(self) -> None:
        self.seen = {}

    def stop(self) -> None:
        self.seen = None

    def note(self, out: Any) -> None:
        if self.seen is not None:
            for t in tensors_in(out):
                self.seen[id(t)] = weakref.ref(t)

    def mark(self, phase: str, value: Any, is_host: Callable[[Tensor], bool]) -> None:
        """After setup() or inputs(), with what it returned (an Args): the tensors reachable from it that no call was
        seen making, by path (a keyword's name, or "setup[0]" for a positional value)."""
        from cgtool.trace.state_walk import state_tensors

        if self.seen is None:
            return
        roots = [*((f"{phase}[{i}]", v) for i, v in enumerate(getattr(value, "args", ()))),
                 *getattr(value, "kwargs", {}).items()]
        seen = self.seen
        for path, t in state_tensors(roots):
            ref = seen.get(id(t))
            if (ref is not None and ref() is t) or is_host(t):
                continue
            self._put(t, path)

    # ---- the step ---------------------------------------------------------------------------------
    def origin_of(self, tensors: list[Tensor], is_host: Callable[[Tensor], bool]) -> str | None:
        """The path of an unsure tensor among an op's tensors when every other one is a host or unsure tensor
        (one device tensor among them decides: the op runs on the GPU)."""
        path = None
        for t in tensors:
            p = self.path(t)
            if p is not None:
                path = path or p
            elif not is_host(t):
                return None
        return path

    def path(self, t: Tensor) -> str | None:
        entry = recall(self.unsure, t)
        return entry[1] if entry is not None else None

    def tag(self, out: Any, path: str) -> None:
        for t in tensors_in(out):
            self._put(t, path)

    def _put(self, t: Tensor, path: str) -> None:
        remember(self.unsure, t, path)
