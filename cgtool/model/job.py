"""Job: what one worker process is asked to do (capture, lint's analysis, or bench), as sent over the
process boundary. Built once by the commands, read by the pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CAPTURE = "capture"  # capture pipeline (also lint's analysis); CPU analysis when there is no GPU
BENCH = "bench"  # careful eager-versus-replay timing
PARTIAL = "partial"  # partial capture: the step in pieces (--piecewise), the module map (--modules DEPTH)
KINDS = (CAPTURE, BENCH, PARTIAL)


@dataclass(frozen=True)
class Job:
    kind: str  # CAPTURE, BENCH or PARTIAL
    script: str  # absolute path of the user's script
    entry: str  # the function to capture ("step")
    settings: dict[str, Any] = field(default_factory=dict)  # warmup, capture_mode, timing, budget_s, sizes, ...
    force_cpu: bool = False  # run the CPU analysis even where a GPU is present
    work_dir: str | None = None  # where the worker may write files (the driver's DOT)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown job kind {self.kind!r}")

    def with_work_dir(self, work_dir: str | None) -> Job:
        return Job(self.kind, self.script, self.entry, dict(self.settings), self.force_cpu, work_dir)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "script": self.script, "entry": self.entry, "settings": dict(self.settings),
                "force_cpu": self.force_cpu, "work_dir": self.work_dir}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Job:
        return cls(d["kind"], d["script"], d["entry"], dict(d.get("settings") or {}), bool(d.get("force_cpu")),
                   d.get("work_dir"))
