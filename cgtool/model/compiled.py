"""What torch.compile's CUDAGraph Trees did in a compiled step: the compile calls, tree functions, graphs,
skips, re-records, fallbacks, kernel share, pool memory, timing three ways. Records and their JSON only; the
text parsing of torch's log records lives in model/compiled_logs.py (no torch, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cgtool.model.codec import Record
from cgtool.model.frame import Frame

# Event kinds
SKIP = "skip"  # torch skipped CUDA graphs for a compiled graph (runs without them)
PARTITION = "partition"  # graph_partition split a compiled graph: ops that run outside CUDA graphs
RERECORD = "rerecord"  # a tree function recorded a new graph because an invariant changed
PENDING_BACKWARD = "pending-backward"  # the fast path refused: outputs still waiting for backward
OVERWRITTEN = "overwritten-output"  # an output read after a later replay overwrote it
DYNAMIC_SHAPES = "dynamic-shapes"  # torch's warning: a new graph per distinct input size
RECOMPILE = "recompile"  # dynamo compiled a function again (a guard failed: a new shape, a new constant)
FALLBACKS = (PENDING_BACKWARD, OVERWRITTEN)


@dataclass(frozen=True)
class CompileSite(Record):
    """One torch.compile call (or decorator, Module.compile(), torch._dynamo.optimize) seen while the script ran,
    with the arguments it got and whether it asks for CUDA graphs."""

    file: str  # where the call was written: the user's file or a library's
    line: int
    mode: str  # "reduce-overhead", "max-autotune", "default", ... ("" when not given)
    backend: str  # "inductor", "cudagraphs", or the backend's name
    cudagraphs: bool  # this compile makes CUDA graphs (mode, options["triton.cudagraphs"] or backend)
    source: str = ""
    target: str = ""  # what was compiled: the function's or the module's class name
    form: str = "torch.compile"  # torch.compile, Module.compile(), torch._dynamo.optimize
    phase: str = ""  # when it was called: load (import time), setup, step
    library: bool = False  # the call is in a library's code, not the user's
    called_from: Frame | None = None  # the user's line that led to a library's compile call


@dataclass(frozen=True)
class GraphBreak(Record):
    """A graph break dynamo made inside compiled code: the user's line, torch's reason, how often it was met."""

    frame: Frame | None
    reason: str  # torch's title: "Unsupported Tensor.item() call ...", "Data-dependent branching", ...
    detail: str = ""  # torch's explanation, one line
    count: int = 1
    kind: str = ""  # item, branch, print, call, other: what the user did


@dataclass(frozen=True)
class TreeFunction(Record):
    """One function of the trees (a compiled graph, or one partition of it; forward and backward apart)."""

    function_id: int
    name: str  # torch's name: "partition_0", or the compiled graph's
    mode: str  # INFERENCE, FORWARD, BACKWARD
    compile_id: str  # dynamo's "frame/compile" id, e.g. "0/0"
    graphs: int  # CUDAGraph nodes recorded for it (re-records and distinct parents count)
    symint_key: str | None = None  # the dynamic-shape / int-input key this function stands for
    rerecords: int = 0  # unexpected re-records torch counted (num_rerecord)


# CompiledEvent.guard_on: what a failed recompile guard checks
GUARD_SIZE = "size"  # a tensor's size ("size mismatch"): a graph per shape once dynamo makes it a symbol
GUARD_VALUE = "value"  # a Python int's value (`== 8`): a graph per distinct value


@dataclass(frozen=True)
class CompiledEvent(Record):
    """A skip, a re-record, a fallback or a warning, with torch's reason and the user's line where known."""

    kind: str
    reason: str  # short: "mutated inputs (1 instances)", "static input data pointer changed", ...
    message: str  # torch's text (trimmed)
    frame: Frame | None = None
    count: int = 1  # how many records said the same thing
    # a recompile (RECOMPILE): the function dynamo recompiled, the guard that failed (torch's words) and what it
    # guards, read from torch's text where the event is made (model/compiled_logs.py): GUARD_SIZE, GUARD_VALUE or ""
    function: str = ""
    guard: str = ""
    guard_on: str = ""

    JSON_ORDER = ("kind", "reason", "message", "count", "frame", "function", "guard", "guard_on")

    def json_out(self, d: dict[str, Any]) -> dict[str, Any]:
        """A recompile's function, guard and guard_on; no such keys for the other kinds."""
        if not self.function:
            for key in ("function", "guard", "guard_on"):
                del d[key]
        return d


@dataclass(frozen=True)
class TreeGraph(Record):
    """One CUDA graph the trees recorded, as read through cuda-bindings."""

    graph_id: int
    function_id: int
    nodes: int = 0
    kernel_nodes: int = 0
    kernels: tuple[tuple[str, int], ...] = ()  # kernel name, count; most first
    dot: str | None = None  # the file written for it (graph.dot, graph-2.dot, ...)
    error: str | None = None  # why it could not be read


@dataclass
class CompiledRun(Record):
    """The `compiled` section of a report."""

    JSON_ORDER = ("mode", "sites", "observed", "functions", "events", "graphs", "graphs_recorded", "iterations",
                  "kernels_in_graphs", "kernels_outside", "kernel_share", "us_in_graphs", "us_outside", "triton_kernels",
                  "pool_bytes", "pool_allocated_bytes", "breaks", "dynamo_graphs", "first_steady_s", "captured_by",
                  "timings_us", "timing_method", "observe_cost", "notes")
    JSON_COMPUTED = {"graphs_recorded": lambda r: r.graphs_recorded, "kernel_share": lambda r: r.kernel_share}

    mode: str = ""  # how the step ran: "torch.compile reduce-overhead (CUDAGraph Trees)", ...
    sites: list[CompileSite] = field(default_factory=list)
    observed: bool = False  # True: the trees were watched on a GPU; False: only the compile calls are known
    functions: list[TreeFunction] = field(default_factory=list)
    events: list[CompiledEvent] = field(default_factory=list)
    graphs: list[TreeGraph] = field(default_factory=list)
    iterations: int = 0  # step calls observed (warmup + steady)
    kernels_in_graphs: int | None = None  # per steady iteration (profiler)
    kernels_outside: int | None = None
    us_in_graphs: float | None = None
    us_outside: float | None = None
    triton_kernels: int = 0  # kernels named triton_* per steady iteration: the compiled code did run
    pool_bytes: int | None = None  # reserved by the trees' memory pool (allocator segments of that pool)
    pool_allocated_bytes: int | None = None  # of those, bytes in live tensors
    breaks: list[GraphBreak] = field(default_factory=list)  # dynamo's graph breaks in compiled code
    dynamo_graphs: int | None = None  # graphs dynamo compiled (unique_graphs): breaks and recompiles add some
    first_steady_s: float | None = None  # wall time from the first call of the step to the first steady one
    captured_by: str = "trees"  # trees: torch.compile's CUDAGraph Trees; cgtool: cgtool's capture of compiled code
    timings_us: dict[str, float] = field(default_factory=dict)  # eager, compiled, cudagraphs (median per step)
    timing_method: str = ""
    observe_cost: float | None = None  # observed step time / plain step time (steady state)
    notes: list[str] = field(default_factory=list)

    @property
    def graphs_recorded(self) -> int:
        return sum(f.graphs for f in self.functions)

    @property
    def graphing(self) -> bool:
        return wants_cudagraphs(self.sites)

    @property
    def kernel_share(self) -> float | None:
        if self.kernels_in_graphs is None or self.kernels_outside is None:
            return None
        total = self.kernels_in_graphs + self.kernels_outside
        return None if total == 0 else self.kernels_in_graphs / total

    def of_kind(self, *kinds: str) -> list[CompiledEvent]:
        return [e for e in self.events if e.kind in kinds]


def wants_cudagraphs(sites: list[CompileSite]) -> bool:
    """Some compile call asks for CUDA graphs (or for a backend whose graphs only a run can tell)."""
    return any(s.cudagraphs for s in sites)


def describe_mode(sites: list[CompileSite]) -> str:
    """The mode line of the report, from the compile calls seen."""
    graphing = [s for s in sites if s.cudagraphs]
    if not graphing:
        if not sites:
            return "eager"
        backends = sorted({s.backend for s in sites})
        return f"torch.compile without CUDA graphs (backend {', '.join(backends)})"
    kinds = sorted({s.mode if s.mode else f"backend={s.backend}" for s in graphing})
    return f"torch.compile {', '.join(kinds)} (CUDAGraph Trees)"
