"""The record of a rank's torch.distributed calls and DistributedDataParallel constructions.

`watch_distributed(record, phase)` wraps the c10d collectives of `torch.distributed` (the real functions,
wrapped, not replaced, as cuda_watch does for stream calls) and DDP's constructor. Each call is reported
to `record(event)` *before* it runs, so a collective that never returns (a rank-dependent branch, a peer
that died) is still on record. Only the outermost call is reported (all_gather_object's inner all_gather is
not). Collectives DDP's reducer issues from C++ do not pass through Python and are not seen here; the
graph's NCCL kernels show them.
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any, Callable

from cgtool.model.frame import Frame
from cgtool.script.frames import innermost_user_frame

COLLECTIVES = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "reduce_scatter",
    "reduce_scatter_tensor", "all_gather_single", "reduce_scatter_single", "all_to_all", "all_to_all_single", "broadcast", "broadcast_object_list", "reduce",
    "gather", "gather_object", "scatter", "scatter_object_list", "barrier", "monitored_barrier", "send", "recv",
    "isend", "irecv", "batch_isend_irecv",
)


class CollectivesDiverged(RuntimeError):
    """Raised inside a rank's collective call when the ranks' sequences of collectives part
    (cgtool/pipeline/rank_sequence.py): the call would never complete."""


def _describe(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    parts = []
    for a in list(args) + list(kwargs.values()):
        shape = getattr(a, "shape", None)
        if shape is not None and hasattr(a, "dtype"):
            parts.append(f"{str(a.dtype).replace('torch.', '')}[{','.join(str(s) for s in shape)}]")
        elif isinstance(a, (list, tuple)) and a and hasattr(a[0], "shape"):
            parts.append(f"{len(a)} tensors")
        elif isinstance(a, (list, tuple)) and a and all(type(x) is int for x in a):  # split sizes, on the host
            parts.append(f"sizes[{','.join(map(str, a[:16]))}{',...' if len(a) > 16 else ''}]")
        elif type(a).__name__ in ("ReduceOp", "RedOpType"):
            parts.append(str(a).rsplit(".", 1)[-1])
    return " ".join(parts)


def _stream_state() -> tuple[bool | None, bool | None]:
    """(capturing, on the default stream) of the current stream: real CUDA, cgtool's CPU stand-ins, or unknown."""
    from cgtool.trace import standin_api

    try:
        owner = standin_api.active()
    except RuntimeError:  # not the CPU run
        pass
    else:
        return bool(owner.capturing), owner.current == standin_api.DEFAULT_STREAM
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            return (bool(torch.cuda.is_current_stream_capturing()),
                    torch.cuda.current_stream().cuda_stream == torch.cuda.default_stream().cuda_stream)
    except Exception:  # noqa: BLE001 - a probe must never break the user's call
        pass
    return None, None


class DistWatch:
    def __init__(self, record: Callable[[dict[str, Any]], None], phase: Callable[[], str],
                 on_collective: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.record = record
        self.phase = phase  # the pipeline's phase under way
        self.on_collective = on_collective  # hears each collective before it runs; may raise CollectivesDiverged
        self.counts: dict[str, int] = {}
        self.iteration = -1  # the step call under way (the rank job counts them); -1 before the first
        self._local = threading.local()
        self._saved: list[tuple[Any, str, Any]] = []

    def _collective(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        capturing, _default = _stream_state()
        phase = self.phase()
        if capturing and phase != "capture":
            phase = "capture"  # the CPU run's emulated capture iteration runs within its "warmup" phase
        index = self.counts.get(phase, 0)
        self.counts[phase] = index + 1
        frame = innermost_user_frame(sys._getframe(1))
        rec = {"index": index, "phase": phase, "op": name, "iteration": self.iteration,
               "detail": _describe(args, kwargs), "capturing": capturing, "frame": _json(frame)}
        self.record({"collective": rec})
        if self.on_collective is not None:
            self.on_collective(rec)

    def _wrap(self, owner: Any, name: str, before: Callable[..., None]) -> None:
        real = getattr(owner, name, None)
        if real is None or getattr(real, "__cgtool_wrapped__", False):
            return
        local = self._local

        @functools.wraps(real)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            depth = getattr(local, "depth", 0)
            if depth == 0:
                try:
                    before(*args, **kwargs)
                except CollectivesDiverged:
                    raise  # the call would never complete: end the step here, at the user's line
                except Exception:  # noqa: BLE001 - recording must never break the user's call
                    pass
            local.depth = depth + 1
            try:
                return real(*args, **kwargs)
            finally:
                local.depth = depth

        wrapper.__cgtool_wrapped__ = True  # type: ignore[attr-defined]
        self._saved.append((owner, name, owner.__dict__.get(name, real) if isinstance(owner, type) else real))
        setattr(owner, name, wrapper)

    def __enter__(self) -> DistWatch:
        import torch.distributed as dist

        for name in COLLECTIVES:
            self._wrap(dist, name, functools.partial(lambda n, *a, **k: self._collective(n, a, k), name))
        try:
            from torch.nn.parallel import DistributedDataParallel as DDP
        except ImportError:
            return self

        def ddp_init(module_self: Any, *args: Any, **kwargs: Any) -> None:
            _capturing, on_default = _stream_state()
            self.record({"ddp": {"frame": _json(innermost_user_frame(sys._getframe(1))),
                                 "on_default_stream": on_default}})

        self._wrap(DDP, "__init__", ddp_init)
        return self

    def __exit__(self, *exc: Any) -> None:
        while self._saved:
            owner, name, old = self._saved.pop()
            setattr(owner, name, old)


def _json(frame: Frame | None) -> dict[str, Any] | None:
    return None if frame is None else frame.to_json()


def watch_distributed(record: Callable[[dict[str, Any]], None], phase: Callable[[], str],
                      on_collective: Callable[[dict[str, Any]], None] | None = None) -> DistWatch:
    return DistWatch(record, phase, on_collective)
