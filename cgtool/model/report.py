"""The report: everything one run learned (environment, graph, replay check, timings, findings, errors).

The worker builds it, `capture` writes it as report.json, `lint`, `bench` and `dot` read it. The JSON
schema is versioned (SCHEMA_VERSION) and documented in docs/report-schema.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cgtool.graph.model import Graph
from cgtool.graph.summary_counts import graph_counts
from cgtool.model.codec import Record, meta
from cgtool.model.compiled import CompiledRun
from cgtool.model.finding import Finding
from cgtool.model.graph_memory import GraphMemory
from cgtool.model.node_profile import NodeProfile
from cgtool.model.partial import ModuleMap, Piecewise
from cgtool.model.report_parts import NO_CUDA, NO_CUDA_TEXT, ErrorRecord, ReplayCheck, Skip, TensorDiff, Timings

__all__ = ["ErrorRecord", "ReplayCheck", "Report", "Skip", "TensorDiff", "Timings"]

# 2 added `piecewise` and `modules` (partial capture); `compiled` is optional in 2. 3: a finding's verdict reason is
# its own field (`reason`, no longer appended to `message`), findings carry `kind`, `origin` and `predicts`, and
# `skipped` entries are records ({"code", "text"}, were strings). 4: how long cgtool's own phases took is `phase_ms`
# (were `*_ms` keys of `settings`), and `settings` holds every setting of the job
SCHEMA_VERSION = 4
READABLE_SCHEMAS = (1, 2, 3, 4)  # a schema-1 report reads with both new sections null; schema 1-2 `skipped` as text
PHASES = ("capture", "read_graph", "driver_dot", "node_lines", "write_dots", "write_json")  # the keys of Report.phase_ms

# Report.status values
CAPTURED = "captured"  # capture ran and a graph was read
CAPTURE_FAILED = "capture-failed"  # capture raised (or produced an unusable graph)
COMPILED = "compiled"  # the step is compiled with CUDA graphs: torch.compile's trees were observed, no capture
CPU_ONLY = "cpu-only"  # no CUDA device: the script ran on CPU only
SCRIPT_ERROR = "script-error"  # the script could not be loaded, or setup/inputs/step raised in warmup
WORKER_FAILED = "worker-failed"  # the worker crashed, timed out, or was interrupted
CPU_SKIPPED = Skip(NO_CUDA, NO_CUDA_TEXT)  # on a CPU-only run


@dataclass
class Report(Record):
    # The keys of report.json in order: a new field takes its place here (the codec refuses a field left out)
    JSON_ORDER = ("schema", "cgtool_version", "script", "entry", "status", "device", "environment", "settings",
                  "phase_ms", "graph", "replay", "timings", "memory", "piecewise", "modules", "compiled", "node_lines", "findings", "errors",
                  "skipped", "outputs", "script_output")
    JSON_COMPUTED = {"schema": lambda _: SCHEMA_VERSION}

    script: str
    entry: str
    status: str = SCRIPT_ERROR
    device: str = "cpu"
    environment: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)  # the job's settings (model/job.py)
    graph: Graph | None = field(default=None, metadata=meta(write=lambda g: _graph_json(g)))  # with its `counts`
    replay: ReplayCheck | None = None
    timings: Timings | None = None
    memory: GraphMemory | None = None  # the captured graph's private pool and static buffers (allocator snapshot)
    piecewise: Piecewise | None = None  # --piecewise: the step captured in pieces at its break points
    modules: ModuleMap | None = None  # --modules DEPTH: which submodules capture on their own
    compiled: CompiledRun | None = None  # torch.compile with CUDA graphs: what its trees did (docs/compiled.md)
    node_lines: NodeProfile | None = None  # each graph node's line and replay GPU time (docs/node-lines.md)
    findings: list[Finding] = field(default_factory=list)
    errors: list[ErrorRecord] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)  # phases or rules that could not run, with why
    outputs: dict[str, str] = field(default_factory=dict)  # name -> path written
    script_output: str = ""  # the tail of what the script printed
    cgtool_version: str = ""
    phase_ms: dict[str, float] = field(default_factory=dict)  # PHASES: how long each of cgtool's own phases took

    @classmethod
    def json_in(cls, d: Any) -> Mapping[str, Any]:
        """report.json of any readable schema: 1 reads with `piecewise` and `modules` null, 1-2 `skipped` as
        sentences (Skip.from_json)."""
        schema = d.get("schema") if isinstance(d, Mapping) else None
        if schema not in READABLE_SCHEMAS:
            raise ValueError(f"report schema {schema!r} is not a supported version {READABLE_SCHEMAS}")
        d = {**d, "settings": {k: v for k, v in (d.get("settings") or {}).items()
                                if not (k.endswith("_ms") and k[:-3] in PHASES)}, "phase_ms": _phase_ms(d)}
        return super().json_in(d)


def _graph_json(graph: Graph | None) -> dict[str, Any] | None:
    return None if graph is None else {**graph.to_json(), "counts": graph_counts(graph)}


def _phase_ms(d: Mapping[str, Any]) -> dict[str, float]:
    """A report's phase times: `phase_ms`, or (schema 3 and before) the `*_ms` keys of its settings."""
    if d.get("phase_ms") is not None:
        return {str(k): float(v) for k, v in d["phase_ms"].items()}
    old = d.get("settings") or {}
    return {p: float(old[f"{p}_ms"]) for p in PHASES if isinstance(old.get(f"{p}_ms"), (int, float))}
