"""The GPU run's record of stream, event and synchronize calls (the real API, wrapped, not replaced).

`watch_cuda_calls(record)` wraps torch.cuda.synchronize, Stream.wait_stream/wait_event/record_event/
synchronize/query, Event.record/wait/synchronize/query/elapsed_time, torch.cuda.stream(...) and
set_stream, and reports each call to `record(kind, stream, target)` (Tracer.stream_event) before
running it, with the same kinds as the CPU stand-ins. This is what lets the GPU run name the line of a
torch.cuda.synchronize() (which set_sync_debug_mode does not report), of a fork that is never joined,
and of a switch to the default stream. Everything is restored on exit.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from cgtool.model.trace import RecordStreamEvent


def _sid(stream: Any) -> int | None:
    return getattr(stream, "stream_id", None)


class CudaWatch:
    def __init__(self, record: RecordStreamEvent) -> None:
        self.record = record
        self._saved: list[tuple[Any, str, Any]] = []

    def _wrap(self, owner: Any, name: str, report: Callable[..., tuple[str, int | None, int | None] | None]) -> None:
        real = getattr(owner, name, None)
        if real is None:
            return
        record = self.record

        @functools.wraps(real)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                what = report(*args, **kwargs)
                if what is not None:
                    record(*what)
            except Exception:  # noqa: BLE001 - recording must never break the user's call
                pass
            return real(*args, **kwargs)

        self._saved.append((owner, name, owner.__dict__.get(name) if isinstance(owner, type) else real))
        setattr(owner, name, wrapper)

    def __enter__(self) -> CudaWatch:
        import torch

        c = torch.cuda

        def current() -> int | None:
            return c.current_stream().stream_id

        self._wrap(c, "synchronize", lambda device=None: ("sync-device", None, None))
        self._wrap(c, "set_stream", lambda stream: ("switch", _sid(stream), None) if stream is not None else None)
        S, E = c.Stream, c.Event
        self._wrap(S, "wait_stream", lambda self, other: ("wait-stream", self.stream_id, other.stream_id))
        self._wrap(S, "wait_event", lambda self, ev: ("wait-event", self.stream_id, id(ev)))
        self._wrap(S, "synchronize", lambda self: ("sync-stream", self.stream_id, None))
        self._wrap(S, "query", lambda self: ("query-stream", self.stream_id, None))
        self._wrap(E, "record", lambda self, stream=None: ("record-event", _sid(stream) if stream is not None
                                                           else current(), id(self)))
        self._wrap(E, "wait", lambda self, stream=None: ("wait-event", _sid(stream) if stream is not None
                                                         else current(), id(self)))
        self._wrap(E, "synchronize", lambda self: ("sync-event", None, id(self)))
        self._wrap(E, "query", lambda self: ("query-event", None, id(self)))
        self._wrap(E, "elapsed_time", lambda self, end: ("elapsed-time", None, id(end)))
        self._wrap(c.StreamContext, "__enter__", lambda self: ("switch", _sid(getattr(self, "stream", None)), None)
                   if getattr(self, "stream", None) is not None else None)
        return self

    def __exit__(self, *exc: Any) -> None:
        while self._saved:
            owner, name, old = self._saved.pop()
            setattr(owner, name, old)


def watch_cuda_calls(record: RecordStreamEvent) -> CudaWatch:
    """Context manager for the GPU run; `record` is usually Tracer.stream_event."""
    return CudaWatch(record)
