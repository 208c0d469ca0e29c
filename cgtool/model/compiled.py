"""What torch.compile's CUDAGraph Trees did in a compiled step: the compile calls, tree functions, graphs,
skips, re-records, fallbacks, kernel share, pool memory, timing three ways. Records and their JSON only; the
text parsing of torch's log records lives in model/compiled_logs.py (no torch, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

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
class CompileSite:
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

    def to_json(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["called_from"] = None if self.called_from is None else self.called_from.to_json()
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CompileSite:
        cf = d.get("called_from")
        return cls(d["file"], int(d["line"]), d.get("mode", ""), d.get("backend", ""), bool(d.get("cudagraphs")),
                   d.get("source", ""), d.get("target", ""), d.get("form", "torch.compile"), d.get("phase", ""),
                   bool(d.get("library")), None if cf is None else Frame.from_json(cf))


@dataclass(frozen=True)
class GraphBreak:
    """A graph break dynamo made inside compiled code: the user's line, torch's reason, how often it was met."""

    frame: Frame | None
    reason: str  # torch's title: "Unsupported Tensor.item() call ...", "Data-dependent branching", ...
    detail: str = ""  # torch's explanation, one line
    count: int = 1
    kind: str = ""  # item, branch, print, call, other: what the user did

    def to_json(self) -> dict[str, Any]:
        return {"frame": None if self.frame is None else self.frame.to_json(), "reason": self.reason,
                "detail": self.detail, "count": self.count, "kind": self.kind}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> GraphBreak:
        fr = d.get("frame")
        return cls(None if fr is None else Frame.from_json(fr), d.get("reason", ""), d.get("detail", ""),
                   int(d.get("count", 1)), d.get("kind", ""))


@dataclass(frozen=True)
class TreeFunction:
    """One function of the trees (a compiled graph, or one partition of it; forward and backward apart)."""

    function_id: int
    name: str  # torch's name: "partition_0", or the compiled graph's
    mode: str  # INFERENCE, FORWARD, BACKWARD
    compile_id: str  # dynamo's "frame/compile" id, e.g. "0/0"
    graphs: int  # CUDAGraph nodes recorded for it (re-records and distinct parents count)
    symint_key: str | None = None  # the dynamic-shape / int-input key this function stands for
    rerecords: int = 0  # unexpected re-records torch counted (num_rerecord)

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TreeFunction:
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})


# CompiledEvent.guard_on: what a failed recompile guard checks
GUARD_SIZE = "size"  # a tensor's size ("size mismatch"): a graph per shape once dynamo makes it a symbol
GUARD_VALUE = "value"  # a Python int's value (`== 8`): a graph per distinct value


@dataclass(frozen=True)
class CompiledEvent:
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

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "reason": self.reason, "message": self.message, "count": self.count,
                "frame": None if self.frame is None else self.frame.to_json(),
                **({"function": self.function, "guard": self.guard, "guard_on": self.guard_on} if self.function else {})}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CompiledEvent:
        fr = d.get("frame")
        return cls(d["kind"], d["reason"], d.get("message", ""), None if fr is None else Frame.from_json(fr),
                   int(d.get("count", 1)), d.get("function", ""), d.get("guard", ""), d.get("guard_on", ""))


@dataclass(frozen=True)
class TreeGraph:
    """One CUDA graph the trees recorded, as read through cuda-bindings."""

    graph_id: int
    function_id: int
    nodes: int
    kernel_nodes: int
    kernels: tuple[tuple[str, int], ...] = ()  # kernel name, count; most first
    dot: str | None = None  # the file written for it (graph.dot, graph-2.dot, ...)
    error: str | None = None  # why it could not be read

    def to_json(self) -> dict[str, Any]:
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "kernels": [list(k) for k in self.kernels]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TreeGraph:
        return cls(int(d["graph_id"]), int(d["function_id"]), int(d.get("nodes", 0)), int(d.get("kernel_nodes", 0)),
                   tuple((str(n), int(c)) for n, c in d.get("kernels", [])), d.get("dot"), d.get("error"))


@dataclass
class CompiledRun:
    """The `compiled` section of a report."""

    mode: str  # how the step ran: "torch.compile reduce-overhead (CUDAGraph Trees)", ...
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

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "sites": [s.to_json() for s in self.sites],
            "observed": self.observed,
            "functions": [f.to_json() for f in self.functions],
            "events": [e.to_json() for e in self.events],
            "graphs": [g.to_json() for g in self.graphs],
            "graphs_recorded": self.graphs_recorded,
            "iterations": self.iterations,
            "kernels_in_graphs": self.kernels_in_graphs,
            "kernels_outside": self.kernels_outside,
            "kernel_share": self.kernel_share,
            "us_in_graphs": self.us_in_graphs,
            "us_outside": self.us_outside,
            "triton_kernels": self.triton_kernels,
            "pool_bytes": self.pool_bytes,
            "pool_allocated_bytes": self.pool_allocated_bytes,
            "breaks": [b.to_json() for b in self.breaks],
            "dynamo_graphs": self.dynamo_graphs,
            "first_steady_s": self.first_steady_s,
            "captured_by": self.captured_by,
            "timings_us": dict(self.timings_us),
            "timing_method": self.timing_method,
            "observe_cost": self.observe_cost,
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CompiledRun:
        return cls(
            mode=d.get("mode", ""),
            sites=[CompileSite.from_json(s) for s in d.get("sites", [])],
            observed=bool(d.get("observed")),
            functions=[TreeFunction.from_json(f) for f in d.get("functions", [])],
            events=[CompiledEvent.from_json(e) for e in d.get("events", [])],
            graphs=[TreeGraph.from_json(g) for g in d.get("graphs", [])],
            iterations=int(d.get("iterations", 0)),
            kernels_in_graphs=d.get("kernels_in_graphs"),
            kernels_outside=d.get("kernels_outside"),
            us_in_graphs=d.get("us_in_graphs"),
            us_outside=d.get("us_outside"),
            triton_kernels=int(d.get("triton_kernels", 0)),
            pool_bytes=d.get("pool_bytes"),
            pool_allocated_bytes=d.get("pool_allocated_bytes"),
            breaks=[GraphBreak.from_json(b) for b in d.get("breaks", [])],
            dynamo_graphs=d.get("dynamo_graphs"),
            first_steady_s=d.get("first_steady_s"),
            captured_by=d.get("captured_by", "trees"),
            timings_us={k: float(v) for k, v in (d.get("timings_us") or {}).items()},
            timing_method=d.get("timing_method", ""),
            observe_cost=d.get("observe_cost"),
            notes=list(d.get("notes", [])),
        )


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
