"""The trace of a step: per iteration, every op (aten ops and the tensor calls that matter for capture),
with shapes, dtypes, devices, stream and the user's frame; plus stream events. `Tracer` records it.

The data model lives here (OpRecord, StreamEvent, Iteration, Trace, JSON schema TRACE_SCHEMA); the
recording machinery is cgtool/trace/ (Tracer). docs/checks.md explains how the checks read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

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
class OpRecord:
    """One op. Compact on purpose: frames are indices into Trace.frames; `detail` only for rare ops."""

    kind: str  # ATEN, CALL, SYNC_WARNING or ACCUMULATE_GRAD_WARNING
    name: str  # "aten.mm", "Tensor.item", "torch.tensor"
    shapes: tuple[tuple[int, ...], ...] = ()  # of the tensor arguments, in order
    dtypes: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    frame: int = -1  # innermost user frame (index into Trace.frames), -1 when none
    outer: int = -1  # outermost user frame under the harness (normally the line in step)
    stream: int | None = None  # stream id the op was issued on (device ops only)
    capturing: bool | None = None  # torch.cuda.is_current_stream_capturing() (GPU run; None on CPU)
    host: bool = False  # the op works on host tensors only: no GPU work, never a sync
    detail: dict[str, Any] | None = None  # see docs/checks.md: move, src, pinned, via, generator, scalars, ...
    lib: int = -1  # the library frame that issued the op (index into Trace.frames), -1 when the user's own line
    node: int = -1  # GPU capture: nodes the capturing graph held when the op was issued (its own nodes follow)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "name": self.name, "shapes": [list(s) for s in self.shapes],
                             "dtypes": list(self.dtypes), "devices": list(self.devices), "frame": self.frame,
                             "outer": self.outer}
        if self.stream is not None:
            d["stream"] = self.stream
        if self.capturing is not None:
            d["capturing"] = self.capturing
        if self.host:
            d["host"] = True
        if self.detail:
            d["detail"] = _jsonable(self.detail)
        if self.lib >= 0:
            d["lib"] = self.lib
        if self.node >= 0:
            d["node"] = self.node
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> OpRecord:
        detail = d.get("detail")
        if detail:
            detail = {k: tuple(v) if isinstance(v, list) else v for k, v in detail.items()}
        return cls(d["kind"], d["name"], tuple(tuple(s) for s in d.get("shapes", ())), tuple(d.get("dtypes", ())),
                   tuple(d.get("devices", ())), d.get("frame", -1), d.get("outer", -1), d.get("stream"),
                   d.get("capturing"), d.get("host", False), detail or None, d.get("lib", -1),
                   d.get("node", -1))


@dataclass(frozen=True)
class StreamEvent:
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

    def to_json(self) -> dict[str, Any]:
        return {"iteration": self.iteration, "position": self.position, "kind": self.kind, "stream": self.stream,
                "target": self.target, "frame": self.frame}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> StreamEvent:
        return cls(d["iteration"], d["position"], d["kind"], d.get("stream"), d.get("target"), d.get("frame", -1))


@dataclass(frozen=True)
class Rebind:
    """A state tensor the step replaced by another tensor object instead of updating it in place (recorded by the
    Tracer's state watch at the end of an iteration): `path` names it from the step's arguments (`model.avg`,
    `state['ema']`); `frame` is the user's line of the op that made the new tensor, else the step's `def` line;
    `read` says whether the step read the previous tensor at that path first (None: not watched this iteration)."""

    path: str
    frame: int = -1
    read: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "frame": self.frame, "read": self.read}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Rebind:
        return cls(d["path"], d.get("frame", -1), d.get("read"))


@dataclass
class Iteration:
    index: int
    phase: str = "warmup"  # "warmup" or "capture"
    ops: list[OpRecord] = field(default_factory=list)
    stream: int | None = None  # the current stream at the step's first op or stream call (GPU: the capturing one)
    inputs: dict[str, tuple[int, ...]] = field(default_factory=dict)  # shapes of the step's tensor inputs
    error: str | None = None  # the step raised in this iteration: "TypeName: message"
    rebinds: list[Rebind] = field(default_factory=list)  # state tensors the step replaced (see Rebind)

    def to_json(self) -> dict[str, Any]:
        d = {"index": self.index, "phase": self.phase, "ops": [o.to_json() for o in self.ops],
             "inputs": {k: list(v) for k, v in self.inputs.items()}, "error": self.error, "stream": self.stream}
        if self.rebinds:
            d["rebinds"] = [r.to_json() for r in self.rebinds]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Iteration:
        return cls(d["index"], d.get("phase", "warmup"), [OpRecord.from_json(o) for o in d.get("ops", [])],
                   d.get("stream"), {k: tuple(v) for k, v in d.get("inputs", {}).items()}, d.get("error"),
                   [Rebind.from_json(r) for r in d.get("rebinds", ())])


@dataclass
class Trace:
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


    def to_json(self) -> dict[str, Any]:
        return {"schema": TRACE_SCHEMA, "device": self.device, "virtual_cuda": self.virtual_cuda,
                "frames": [f.to_json() for f in self.frames], "iterations": [i.to_json() for i in self.iterations],
                "events": [e.to_json() for e in self.events], "default_stream": self.default_stream,
                "capture_stream": self.capture_stream, "tracer_error": self.tracer_error}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Trace:
        if d.get("schema") != TRACE_SCHEMA:
            raise ValueError(f"trace schema {d.get('schema')!r} is not the supported version {TRACE_SCHEMA}")
        return cls(d.get("device", "cpu"), d.get("virtual_cuda", False), [Frame.from_json(f) for f in d["frames"]],
                   [Iteration.from_json(i) for i in d["iterations"]], [StreamEvent.from_json(e) for e in d["events"]],
                   d.get("default_stream"), d.get("capture_stream"), d.get("tracer_error"))


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
