"""Records of partial capture (issue 13): the step captured in pieces at its break points, and the per-module
capturability map. No torch, no I/O; documented in docs/report-schema.md (`piecewise`, `modules`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cgtool.graph.model import Graph
from cgtool.model.finding import Finding
from cgtool.model.frame import Frame
from cgtool.model.report_parts import ErrorRecord, ReplayCheck, Timings

# Piecewise.status and ModuleMap.status
MEASURED = "measured"  # ran on the GPU: pieces or modules graphed, replay checked, timed
CPU_ONLY = "cpu-only"  # no GPU: what the CPU analysis shows (split points, modules whose ops carry error findings)
FAILED = "failed"  # the attempt itself failed (see `error`)
NOT_POSSIBLE = "not-possible"  # torch refuses to compile or record this step in pieces (note: torch's reason)

# ModuleEntry.status
GRAPHED = "graphed"  # captured on its own (GPU), replay of the whole step with it graphed matches eager
FAILS = "fails"  # its capture failed on the GPU, or the CPU analysis finds errors in its ops
CLEAN = "clean"  # CPU analysis: no error finding in its ops (capturable as far as the CPU can tell)
NOT_CALLED = "not-called"  # the step never called it
SKIPPED = "skipped"  # not tried (reason says why: a parent is graphed, inputs that are not tensors, ...)
DIVERGES = "diverges"  # captured, but the step with it graphed differs from eager (reason: the likely cause)


@dataclass(frozen=True)
class SplitPoint:
    """Where the step is split: the user's line and why (a dynamo graph-break reason, or a finding's rule)."""

    reason: str
    frame: Frame | None = None
    rule: str | None = None  # the finding's rule (CPU analysis), None for a dynamo break reason

    def to_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "frame": None if self.frame is None else self.frame.to_json(), "rule": self.rule}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SplitPoint:
        return cls(d["reason"], None if d.get("frame") is None else Frame.from_json(d["frame"]), d.get("rule"))


@dataclass(frozen=True)
class Piece:
    """One graph of the pieced step, in launch order: its kernels and their GPU time per step (profiler)."""

    index: int  # 1-based
    kernels: int
    gpu_us: float
    graph: Graph | None = None  # the piece's CUDA graph read through cuda-bindings, when it could be kept

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "kernels": self.kernels, "gpu_us": self.gpu_us,
                "graph": None if self.graph is None else self.graph.to_json()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Piece:
        g = d.get("graph")
        return cls(int(d["index"]), int(d["kernels"]), float(d["gpu_us"]), None if g is None else Graph.from_json(g))


@dataclass(frozen=True)
class Piecewise:
    """The step run with its capturable stretches as CUDA graphs and the rest eager."""

    status: str  # MEASURED, CPU_ONLY, NOT_POSSIBLE, FAILED
    method: str  # how the step was split and measured
    splits: tuple[SplitPoint, ...] = ()
    pieces: tuple[Piece, ...] = ()
    kernels_in_graphs: int = 0  # per step
    kernels_outside: int = 0  # launched one by one, outside any graph
    gpu_us_in_graphs: float = 0.0
    gpu_us_outside: float = 0.0
    outside: tuple[tuple[str, int], ...] = ()  # kernels outside graphs: (name, launches per step), most first
    skips: tuple[str, ...] = ()  # pieces the backend left eager, with its reason
    replay: ReplayCheck | None = None
    timings: Timings | None = None  # eager_us: eager step; replay_us: the pieced step
    error: ErrorRecord | None = None
    note: str = ""
    pool_bytes: int | None = None  # the trees' private pool, which all pieces share (allocator segments of it)
    pool_allocated_bytes: int | None = None  # of those, bytes in live tensors

    @property
    def kernel_share(self) -> float | None:
        total = self.kernels_in_graphs + self.kernels_outside
        return self.kernels_in_graphs / total if total else None

    @property
    def time_share(self) -> float | None:
        total = self.gpu_us_in_graphs + self.gpu_us_outside
        return self.gpu_us_in_graphs / total if total > 0 else None

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status, "method": self.method, "splits": [s.to_json() for s in self.splits],
            "pieces": [p.to_json() for p in self.pieces], "kernels_in_graphs": self.kernels_in_graphs,
            "kernels_outside": self.kernels_outside, "kernel_share": self.kernel_share,
            "gpu_us_in_graphs": self.gpu_us_in_graphs, "gpu_us_outside": self.gpu_us_outside,
            "time_share": self.time_share, "outside": [[n, c] for n, c in self.outside], "skips": list(self.skips),
            "replay": None if self.replay is None else self.replay.to_json(),
            "timings": None if self.timings is None else self.timings.to_json(),
            "error": None if self.error is None else self.error.to_json(), "note": self.note,
            "pool_bytes": self.pool_bytes, "pool_allocated_bytes": self.pool_allocated_bytes,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Piecewise:
        return cls(
            d["status"], d.get("method", ""), tuple(SplitPoint.from_json(s) for s in d.get("splits", [])),
            tuple(Piece.from_json(p) for p in d.get("pieces", [])), int(d.get("kernels_in_graphs", 0)),
            int(d.get("kernels_outside", 0)), float(d.get("gpu_us_in_graphs", 0.0)), float(d.get("gpu_us_outside", 0.0)),
            tuple((str(n), int(c)) for n, c in d.get("outside", [])), tuple(d.get("skips", [])),
            _opt(ReplayCheck, d.get("replay")), _opt(Timings, d.get("timings")), _opt(ErrorRecord, d.get("error")),
            d.get("note", ""), d.get("pool_bytes"), d.get("pool_allocated_bytes"),
        )


@dataclass(frozen=True)
class CallSpec:
    """A module's call as it was graphed, for the plan a user pastes (render/plan.py): its arguments as a tree of
    plain values, and the modes it ran under.

    A node of `args` / `kwargs` is {"tensor": [shape, dtype, requires_grad, channels_last]}, {"value": repr,
    "literal": bool} (literal: the repr is valid Python), {"seq": "tuple"|"list", "items": [node, ...]} or
    {"map": {key: node}}."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    backward: bool  # graphed forward and backward (make_graphed_callables), else forward only
    grad_enabled: bool = True
    inference: bool = False
    autocast: str | None = None  # "bfloat16": captured under torch.autocast("cuda", dtype, cache_enabled=False)

    def to_json(self) -> dict[str, Any]:
        return {"args": list(self.args), "kwargs": self.kwargs, "backward": self.backward,
                "grad_enabled": self.grad_enabled, "inference": self.inference, "autocast": self.autocast}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CallSpec:
        return cls(tuple(d.get("args", [])), dict(d.get("kwargs", {})), bool(d.get("backward")),
                   bool(d.get("grad_enabled", True)), bool(d.get("inference")), d.get("autocast"))


@dataclass(frozen=True)
class ModuleEntry:
    """One submodule of the step's model(s), to the depth asked for."""

    path: str  # "model.encoder.layers.0" (the state's name first)
    type: str  # class name
    depth: int  # 0 for a module found in setup()'s state
    status: str  # GRAPHED, FAILS, CLEAN, NOT_CALLED, SKIPPED
    reason: str = ""  # why it fails or was skipped, at the user's line where one is known
    findings: tuple[Finding, ...] = ()  # the error findings among its ops (CPU analysis)
    training: bool = False  # graphed forward and backward (make_graphed_callables), else forward only
    kernels: int | None = None  # kernel nodes of its graph(s)
    call: CallSpec | None = None  # the call it was graphed for (GRAPHED, DIVERGES)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "type": self.type, "depth": self.depth, "status": self.status,
                "reason": self.reason, "findings": [f.to_json() for f in self.findings], "training": self.training,
                "kernels": self.kernels, "call": None if self.call is None else self.call.to_json()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ModuleEntry:
        return cls(d["path"], d["type"], int(d["depth"]), d["status"], d.get("reason", ""),
                   tuple(Finding.from_json(f) for f in d.get("findings", [])), bool(d.get("training")), d.get("kernels"),
                   _opt(CallSpec, d.get("call")))


@dataclass(frozen=True)
class ModuleMap:
    """Which submodules capture on their own, and what graphing the capturable ones gives."""

    status: str  # MEASURED, CPU_ONLY, FAILED
    depth: int
    modules: tuple[ModuleEntry, ...] = ()
    graphed: tuple[str, ...] = ()  # the recommended set: graphed together for the timing and replay check
    replay: ReplayCheck | None = None  # the step with `graphed` as graphs vs eager, from identical state
    timings: Timings | None = None  # eager_us: eager step; replay_us: the step with `graphed` as graphs
    error: ErrorRecord | None = None
    note: str = ""
    tried: tuple[str, ...] = ()  # every module captured, when some were left out of `graphed` (DIVERGES)
    tried_replay: ReplayCheck | None = None  # the step with all of `tried` graphed, which differed from eager

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "depth": self.depth, "modules": [m.to_json() for m in self.modules],
                "graphed": list(self.graphed), "replay": None if self.replay is None else self.replay.to_json(),
                "timings": None if self.timings is None else self.timings.to_json(),
                "error": None if self.error is None else self.error.to_json(), "note": self.note,
                "tried": list(self.tried),
                "tried_replay": None if self.tried_replay is None else self.tried_replay.to_json()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ModuleMap:
        return cls(d["status"], int(d["depth"]), tuple(ModuleEntry.from_json(m) for m in d.get("modules", [])),
                   tuple(d.get("graphed", [])), _opt(ReplayCheck, d.get("replay")), _opt(Timings, d.get("timings")),
                   _opt(ErrorRecord, d.get("error")), d.get("note", ""), tuple(d.get("tried", [])),
                   _opt(ReplayCheck, d.get("tried_replay")))


def _opt(cls: Any, d: dict[str, Any] | None) -> Any:
    return None if d is None else cls.from_json(d)
