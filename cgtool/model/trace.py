"""The trace of a step: per iteration, every op (aten ops and the tensor calls that matter for capture),
with shapes, dtypes, devices, stream and the user's frame; plus stream events. `Tracer` records it.

The data model lives here (OpRecord, StreamEvent, Iteration, Trace, JSON schema TRACE_SCHEMA); the
recording machinery is cgtool/trace/ (Tracer). docs/checks.md explains how the checks read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

from cgtool.model.codec import Record, is_empty, is_negative, is_none, meta
from cgtool.model.frame import Frame

TRACE_SCHEMA = 1

# What receives a stream/event/sync call: record(kind, stream, target) (Tracer.stream_event).
RecordStreamEvent = Callable[[str, "int | None", "int | None"], None]

ATEN = "aten"  # OpRecord.kind: an aten op seen by TorchDispatchMode
CALL = "call"  # OpRecord.kind: a Python-level tensor call seen by TorchFunctionMode
SYNC_WARNING = "sync-warning"  # OpRecord.kind: torch.cuda.set_sync_debug_mode reported a sync (GPU run)
# OpRecord.kind: autograd warned that a reused AccumulateGrad node's stream differs from its gradient's (GPU run)
ACCUMULATE_GRAD_WARNING = "accumulate-grad-warning"


@dataclass(slots=True)
class OpRecord(Record):
    """One op. Compact on purpose: frames are indices into Trace.frames; `detail` only for rare ops."""

    kind: str  # ATEN, CALL, SYNC_WARNING or ACCUMULATE_GRAD_WARNING
    name: str  # "aten.mm", "Tensor.item", "torch.tensor"
    shapes: tuple[tuple[int, ...], ...] = ()  # of the tensor arguments, in order
    dtypes: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    frame: int = -1  # innermost user frame (index into Trace.frames), -1 when none
    outer: int = -1  # outermost user frame under the harness (normally the line in step)
    stream: int | None = field(default=None, metadata=meta(omit=is_none))  # stream id the op was issued on (device ops only)
    # torch.cuda.is_current_stream_capturing() (GPU run; None on CPU)
    capturing: bool | None = field(default=None, metadata=meta(omit=is_none))
    host: bool = field(default=False, metadata=meta(omit=is_empty))  # the op works on host tensors only: never a sync
    # see docs/checks.md: move, src, pinned, via, generator, scalars, ...
    detail: dict[str, Any] | None = field(default=None, metadata=meta(omit=is_empty, write=lambda v: _jsonable(v),
                                                                       read=lambda v: _detail(v)))
    # the library frame that issued the op (index into Trace.frames), -1 when the user's own line
    lib: int = field(default=-1, metadata=meta(omit=is_negative))
    # GPU capture: nodes the capturing graph held when the op was issued (its own nodes follow)
    node: int = field(default=-1, metadata=meta(omit=is_negative))


@dataclass(frozen=True)
class StreamEvent(Record):
    """A call of the CUDA stream/event/sync API (recorded by the CPU stand-ins or the GPU watcher).

    kind: create, switch, wait-stream, record-event, wait-event, sync-device, sync-stream, sync-event,
    query-stream, query-event, elapsed-time, optimizer-check (stream: param groups, target: groups not
    capturable; the CPU stand-in of torch's capture health check). `stream` is the stream acted on (the waiting stream for a
    wait); `target` is the other stream (wait-stream) or the event id (record/wait/sync/query event).
    """

    iteration: int  # -1 outside iterations (setup)
    position: int  # ops recorded in that iteration before it
    kind: str
    stream: int | None = None
    target: int | None = None
    frame: int = -1


@dataclass(frozen=True)
class Rebind(Record):
    """A state tensor the step replaced by another tensor object instead of updating it in place (recorded by the
    Tracer's state watch at the end of an iteration): `path` names it from the step's arguments (`model.avg`,
    `state['ema']`); `frame` is the user's line of the op that made the new tensor, else the step's `def` line;
    `read` says whether the step read the previous tensor at that path first (None: not watched this iteration)."""

    path: str
    frame: int = -1
    read: bool | None = None


@dataclass(frozen=True)
class HostChange(Record):
    """Python state of setup's (the length of a list, dict, set or deque; a number, flag or string held in one of
    them, in a tuple, a user object or a module of a class not torch's) that the step's call changed (recorded by
    the Tracer's state watch, walked just before the call and after it): `path` names it from the step's arguments
    (`log`, `trainer.step_count`); `before`/`after` are the lengths ("len 3") or values ("2") shown; `frame` is the
    user's line of the op of the step that made a tensor the container grew by, else the step's `def` line;
    `tensors`: the container grew by a tensor the step made (under capture: the graph's own memory)."""

    path: str
    before: str
    after: str
    frame: int = -1
    tensors: bool = field(default=False, metadata=meta(omit=is_empty))


@dataclass
class Iteration(Record):
    JSON_ORDER = ("index", "phase", "ops", "inputs", "error", "stream", "rebinds", "host_changes")

    index: int
    phase: str = "warmup"  # "warmup" or "capture"
    ops: list[OpRecord] = field(default_factory=list)
    stream: int | None = None  # the current stream at the step's first op or stream call (GPU: the capturing one)
    inputs: dict[str, tuple[int, ...]] = field(default_factory=dict)  # shapes of the step's tensor inputs
    error: str | None = None  # the step raised in this iteration: "TypeName: message"
    # state tensors the step replaced (see Rebind)
    rebinds: list[Rebind] = field(default_factory=list, metadata=meta(omit=is_empty))
    # Python state the step changed (see HostChange)
    host_changes: list[HostChange] = field(default_factory=list, metadata=meta(omit=is_empty))


@dataclass
class Trace(Record):
    JSON_ORDER = ("schema", "device", "virtual_cuda", "frames", "iterations", "events", "default_stream",
                  "capture_stream", "tracer_error")
    JSON_COMPUTED = {"schema": lambda _: TRACE_SCHEMA}

    device: str = "cpu"  # the device the step ran on
    virtual_cuda: bool = False  # CPU run standing in for CUDA: CPU tensors count as device tensors unless host-made
    frames: list[Frame] = field(default_factory=list)
    iterations: list[Iteration] = field(default_factory=list)
    events: list[StreamEvent] = field(default_factory=list)
    default_stream: int | None = None  # id of the device's default stream
    capture_stream: int | None = None  # id of the stream the step starts on (CPU: the emulated capturing stream)
    tracer_error: str | None = None  # a tracer failure switched recording off from here on

    def frame(self, index: int) -> Frame | None:
        return self.frames[index] if 0 <= index < len(self.frames) else None

    @classmethod
    def json_in(cls, d: Any) -> Mapping[str, Any]:
        if d.get("schema") != TRACE_SCHEMA:
            raise ValueError(f"trace schema {d.get('schema')!r} is not the supported version {TRACE_SCHEMA}")
        return super().json_in(d)


def _detail(detail: dict[str, Any] | None) -> dict[str, Any] | None:
    """An op's detail as read: its lists as tuples again, an empty one as None."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in detail.items()} if detail else None


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
