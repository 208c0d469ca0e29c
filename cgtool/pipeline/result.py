"""JobResult: what one worker hands back across the process boundary, one tagged type for every job kind (a
capture's Report, a BenchReport, a partial capture's sections), with the partial job's requests to the parent
as fields. `worker/child.py` writes it and `worker/client.py` reads it, both through to_json/from_json."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cgtool.bench.result import BenchReport
from cgtool.model.job import BENCH, CAPTURE, KINDS, PARTIAL
from cgtool.model.partial import ModuleMap, Piecewise
from cgtool.model.report import ErrorRecord, Report


@dataclass
class PartialResult:
    """The partial-capture job's sections: the pieced step, the module map, and the errors met on the way."""

    piecewise: Piecewise | None = None
    modules: ModuleMap | None = None
    errors: list[ErrorRecord] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"piecewise": None if self.piecewise is None else self.piecewise.to_json(),
                "modules": None if self.modules is None else self.modules.to_json(),
                "errors": [e.to_json() for e in self.errors]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> PartialResult:
        return cls(None if d.get("piecewise") is None else Piecewise.from_json(d["piecewise"]),
                   None if d.get("modules") is None else ModuleMap.from_json(d["modules"]),
                   [ErrorRecord.from_json(e) for e in d.get("errors") or []])


@dataclass
class JobResult:
    """One job's result, tagged by the job's kind: `report` for CAPTURE, `bench` for BENCH, `partial` for PARTIAL.
    A partial job may ask the parent for more: `rerun_piecewise` (why) when the pieced step that kept its graphs
    failed and should run again in a fresh worker without keeping them; `modules_pending` when the module map
    was asked for too and runs in a worker of its own (worker/service.py: run_partial_jobs does both)."""

    kind: str
    report: Report | None = None
    bench: BenchReport | None = None
    partial: PartialResult | None = None
    rerun_piecewise: str = ""
    modules_pending: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown job kind {self.kind!r}")
        held = {CAPTURE: self.report, BENCH: self.bench, PARTIAL: self.partial}
        if held[self.kind] is None or any(v is not None for k, v in held.items() if k != self.kind):
            raise ValueError(f"a {self.kind} result holds its own section and no other")

    def to_json(self) -> dict[str, Any]:
        section = {CAPTURE: self.report, BENCH: self.bench, PARTIAL: self.partial}[self.kind]
        assert section is not None  # __post_init__
        return {"kind": self.kind, self.kind: section.to_json(), "rerun_piecewise": self.rerun_piecewise,
                "modules_pending": self.modules_pending}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> JobResult:
        kind = d.get("kind")
        if kind not in KINDS or not isinstance(d.get(kind), dict):
            raise ValueError(f"not a job result: kind {kind!r}")
        section = d[kind]
        return cls(kind, report=Report.from_json(section) if kind == CAPTURE else None,
                   bench=BenchReport.from_json(section) if kind == BENCH else None,
                   partial=PartialResult.from_json(section) if kind == PARTIAL else None,
                   rerun_piecewise=str(d.get("rerun_piecewise") or ""), modules_pending=bool(d.get("modules_pending")))
