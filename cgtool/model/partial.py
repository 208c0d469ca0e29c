"""Records of partial capture (issue 13): the step captured in pieces at its break points, and the per-module
capturability map. No torch, no I/O; documented in docs/report-schema.md (`piecewise`, `modules`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cgtool.graph.model import Graph
from cgtool.model.codec import Record
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
class SplitPoint(Record):
    """Where the step is split: the user's line and why (a dynamo graph-break reason, or a finding's rule)."""

    reason: str
    frame: Frame | None = None
    rule: str | None = None  # the finding's rule (CPU analysis), None for a dynamo break reason


@dataclass(frozen=True)
class Piece(Record):
    """One graph of the pieced step, in launch order: its kernels and their GPU time per step (profiler)."""

    index: int  # 1-based
    kernels: int
    gpu_us: float
    graph: Graph | None = None  # the piece's CUDA graph read through cuda-bindings, when it could be kept


@dataclass(frozen=True)
class Piecewise(Record):
    """The step run with its capturable stretches as CUDA graphs and the rest eager."""

    JSON_ORDER = ("status", "method", "splits", "pieces", "kernels_in_graphs", "kernels_outside", "kernel_share",
                  "gpu_us_in_graphs", "gpu_us_outside", "time_share", "outside", "skips", "replay", "timings", "error",
                  "note", "pool_bytes", "pool_allocated_bytes")
    JSON_COMPUTED = {"kernel_share": lambda p: p.kernel_share, "time_share": lambda p: p.time_share}

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


@dataclass(frozen=True)
class CallSpec(Record):
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


@dataclass(frozen=True)
class ModuleEntry(Record):
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


@dataclass(frozen=True)
class ModuleMap(Record):
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
