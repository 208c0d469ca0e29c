"""The report: everything one run learned (environment, graph, replay check, timings, findings, errors).

The worker builds it, `capture` writes it as report.json, `lint`, `bench` and `dot` read it. The JSON
schema is versioned (SCHEMA_VERSION) and documented in docs/report-schema.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from cgtool.graph.model import Graph
from cgtool.graph.summary_counts import graph_counts
from cgtool.model.finding import Finding
from cgtool.model.frame import Frame

SCHEMA_VERSION = 1

# Report.status values
CAPTURED = "captured"  # capture ran and a graph was read
CAPTURE_FAILED = "capture-failed"  # capture raised (or produced an unusable graph)
CPU_ONLY = "cpu-only"  # no CUDA device: the script ran on CPU only
SCRIPT_ERROR = "script-error"  # the script could not be loaded, or setup/inputs/step raised in warmup
WORKER_FAILED = "worker-failed"  # the worker crashed, timed out, or was interrupted
CPU_SKIPPED = "capture, graph, replay check and timing need a CUDA device"  # Report.skipped on a CPU-only run


@dataclass(frozen=True)
class ErrorRecord:
    """Something that went wrong in a phase, with the user's frames (innermost last)."""

    phase: str  # load, setup, inputs, warmup, capture, read-graph, replay, timing, worker, output
    type: str  # exception type name, or "timeout", "crash", "interrupted"
    message: str
    frames: tuple[Frame, ...] = ()
    cuda_error: str | None = None  # e.g. "cudaErrorStreamCaptureInvalidated", when one was named

    @property
    def user_frame(self) -> Frame | None:
        return self.frames[-1] if self.frames else None

    @property
    def label(self) -> str:
        """What goes before the message: `RuntimeError [cudaErrorX]: `; nothing for a broken script
        contract (type usage), whose message says it all."""
        if self.type == "usage":
            return ""
        return f"{self.type}{f' [{self.cuda_error}]' if self.cuda_error else ''}: "

    def to_json(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "type": self.type,
            "message": self.message,
            "frames": [f.to_json() for f in self.frames],
            "cuda_error": self.cuda_error,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ErrorRecord:
        return cls(
            phase=d["phase"],
            type=d["type"],
            message=d["message"],
            frames=tuple(Frame.from_json(f) for f in d.get("frames", [])),
            cuda_error=d.get("cuda_error"),
        )


@dataclass(frozen=True)
class TensorDiff:
    """Replay-versus-eager comparison of one output or state tensor."""

    name: str  # e.g. "output[0]", "state.model.fc1.weight"
    shape: tuple[int, ...]
    dtype: str
    max_abs: float
    max_rel: float
    ok: bool

    def to_json(self) -> dict[str, Any]:
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "shape": list(self.shape)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TensorDiff:
        return cls(d["name"], tuple(d["shape"]), d["dtype"], float(d["max_abs"]), float(d["max_rel"]), bool(d["ok"]))


@dataclass(frozen=True)
class ReplayCheck:
    status: str  # "match", "mismatch", "skipped", "error"
    inputs: str  # which inputs were compared, e.g. "inputs(4) (fresh)" or "the capture's inputs"
    tensors: tuple[TensorDiff, ...] = ()
    note: str = ""

    @property
    def max_abs(self) -> float:
        return max((t.max_abs for t in self.tensors), default=0.0)

    @property
    def max_rel(self) -> float:
        return max((t.max_rel for t in self.tensors), default=0.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "inputs": self.inputs,
            "max_abs": self.max_abs,
            "max_rel": self.max_rel,
            "tensors": [t.to_json() for t in self.tensors],
            "note": self.note,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ReplayCheck:
        return cls(d["status"], d["inputs"], tuple(TensorDiff.from_json(t) for t in d.get("tensors", [])), d.get("note", ""))


@dataclass(frozen=True)
class Timings:
    eager_us: float  # median per-iteration time of the eager step
    replay_us: float  # median per-iteration time of graph replay
    iterations: int  # iterations per mode that the medians summarize
    capture_ms: float | None = None
    instantiate_ms: float | None = None
    method: str = ""

    @property
    def speedup(self) -> float:
        return self.eager_us / self.replay_us if self.replay_us > 0 else float("nan")

    def to_json(self) -> dict[str, Any]:
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "speedup": self.speedup}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Timings:
        return cls(**{f.name: d.get(f.name) for f in fields(cls) if f.name in d})


@dataclass
class Report:
    script: str
    entry: str
    status: str = SCRIPT_ERROR
    device: str = "cpu"
    environment: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)  # warmup, capture mode, ...
    graph: Graph | None = None
    replay: ReplayCheck | None = None
    timings: Timings | None = None
    findings: list[Finding] = field(default_factory=list)
    errors: list[ErrorRecord] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # phases or rules that could not run, with why
    outputs: dict[str, str] = field(default_factory=dict)  # name -> path written
    script_output: str = ""  # the tail of what the script printed
    cgtool_version: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "cgtool_version": self.cgtool_version,
            "script": self.script,
            "entry": self.entry,
            "status": self.status,
            "device": self.device,
            "environment": self.environment,
            "settings": self.settings,
            "graph": None if self.graph is None else {**self.graph.to_json(), "counts": graph_counts(self.graph)},
            "replay": None if self.replay is None else self.replay.to_json(),
            "timings": None if self.timings is None else self.timings.to_json(),
            "findings": [f.to_json() for f in self.findings],
            "errors": [e.to_json() for e in self.errors],
            "skipped": list(self.skipped),
            "outputs": dict(self.outputs),
            "script_output": self.script_output,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Report:
        schema = d.get("schema")
        if schema != SCHEMA_VERSION:
            raise ValueError(f"report schema {schema!r} is not the supported version {SCHEMA_VERSION}")
        return cls(
            script=d["script"],
            entry=d["entry"],
            status=d["status"],
            device=d.get("device", "cpu"),
            environment=d.get("environment", {}),
            settings=d.get("settings", {}),
            graph=None if d.get("graph") is None else Graph.from_json(d["graph"]),
            replay=None if d.get("replay") is None else ReplayCheck.from_json(d["replay"]),
            timings=None if d.get("timings") is None else Timings.from_json(d["timings"]),
            findings=[Finding.from_json(f) for f in d.get("findings", [])],
            errors=[ErrorRecord.from_json(e) for e in d.get("errors", [])],
            skipped=list(d.get("skipped", [])),
            outputs=dict(d.get("outputs", {})),
            script_output=d.get("script_output", ""),
            cgtool_version=d.get("cgtool_version", ""),
        )
