"""Records of a distributed run (`--nproc-per-node N`): what each rank's collectives and DDP wrappers were,
how each rank ended, and the merged report (docs/report-schema.md, "Distributed report")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cgtool.model.finding import Finding
from cgtool.model.frame import Frame
from cgtool.model.report import ErrorRecord, Report

DIST_SCHEMA_VERSION = 1

# NVLink multicast stays off in every rank cgtool starts (the launcher's environment and each rank's own): a
# program that uses it can take a shared host's GPUs out of service. Set, never unset (docs/distributed.md).
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}

# RankResult.ended values
FINISHED = "finished"  # the rank wrote its report
STOPPED = "stopped"  # killed (by the launcher after another rank failed, or by cgtool's timeout) before its report
NOT_STARTED = "not-started"  # the launcher never started it (or it died before announcing itself)


def _frame(d: dict[str, Any] | None) -> Frame | None:
    return None if not d else Frame.from_json(d)


@dataclass(frozen=True)
class Collective:
    """One torch.distributed call a rank made (recorded before it ran, so a call that hangs is recorded too)."""

    index: int  # order among this rank's calls in `phase`
    phase: str  # warmup, capture (the captured iteration), replay-check, timing, setup, ...
    op: str  # e.g. all_reduce, broadcast, barrier
    detail: str = ""  # shapes and dtypes of the tensors, the reduce op: "float32[64,512] SUM"
    capturing: bool | None = None  # the stream it was issued on was capturing (None: unknown)
    frame: Frame | None = None  # the user's line
    iteration: int = -1  # which call of the step (0-based over the whole run); -1 outside a step

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "phase": self.phase, "iteration": self.iteration, "op": self.op,
                "detail": self.detail, "capturing": self.capturing,
                "frame": None if self.frame is None else self.frame.to_json()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Collective:
        return cls(int(d["index"]), d["phase"], d["op"], d.get("detail", ""), d.get("capturing"), _frame(d.get("frame")),
                   int(d.get("iteration", -1)))


@dataclass(frozen=True)
class DdpWrap:
    """A DistributedDataParallel construction: where, and whether the current stream was the default stream."""

    frame: Frame | None
    on_default_stream: bool | None  # None: unknown (CPU run)

    def to_json(self) -> dict[str, Any]:
        return {"frame": None if self.frame is None else self.frame.to_json(), "on_default_stream": self.on_default_stream}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> DdpWrap:
        return cls(_frame(d.get("frame")), d.get("on_default_stream"))


@dataclass
class RankResult:
    """One rank: its own report (None when it was stopped first) and what its event file recorded."""

    rank: int
    report: Report | None = None
    ended: str = NOT_STARTED
    phase: str = ""  # the last phase it announced
    exit: str = ""  # how its process ended, as far as the parent knows ("exit 1", "killed by SIGKILL", ...)
    collectives: list[Collective] = field(default_factory=list)
    ddp: list[DdpWrap] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)  # backend, nccl version, NCCL env settings, device
    output: str = ""  # the tail of what the rank printed
    summary: dict[str, Any] = field(default_factory=dict)  # graph summary: nodes, kernels, nccl_kernels (merge)
    # where this rank saw the ranks' collectives part, as it happened (cgtool/pipeline/rank_sequence.py): index,
    # ranks (rank → op/phase/iteration/detail/file/line, or None for a rank that never calls it), done, message
    divergence: dict[str, Any] | None = None

    @property
    def failed(self) -> bool:
        return (self.report is None or bool(self.report.errors)
                or self.report.status not in ("captured", "compiled", "cpu-only"))

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "ended": self.ended, "phase": self.phase, "exit": self.exit,
                "summary": self.summary, "facts": self.facts,
                "collectives": [c.to_json() for c in self.collectives], "ddp": [d.to_json() for d in self.ddp],
                "report": None if self.report is None else self.report.to_json(), "output": self.output,
                "divergence": self.divergence}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RankResult:
        return cls(int(d["rank"]), None if d.get("report") is None else Report.from_json(d["report"]),
                   d.get("ended", NOT_STARTED), d.get("phase", ""), d.get("exit", ""),
                   [Collective.from_json(c) for c in d.get("collectives", [])],
                   [DdpWrap.from_json(x) for x in d.get("ddp", [])], dict(d.get("facts", {})), d.get("output", ""),
                   dict(d.get("summary", {})), d.get("divergence"))


@dataclass
class DistReport:
    """The merged report of N ranks: per rank, across ranks (findings, graph diffs), the step time."""

    script: str
    entry: str
    world_size: int
    ranks: list[RankResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # cross-rank findings (CG6xx)
    errors: list[ErrorRecord] = field(default_factory=list)  # the launcher's own failures (timeout, crash)
    graph_diffs: dict[str, Any] = field(default_factory=dict)  # "rank r" -> GraphDiff JSON against rank 0
    step: dict[str, Any] = field(default_factory=dict)  # eager_us, replay_us (slowest rank each), speedup
    settings: dict[str, Any] = field(default_factory=dict)
    launcher: list[str] = field(default_factory=list)  # the command that started the ranks
    wall_s: float = 0.0
    outputs: dict[str, str] = field(default_factory=dict)
    cgtool_version: str = ""

    @property
    def status(self) -> str:
        if not self.ranks or any(r.report is None for r in self.ranks):
            return "rank-failed"
        statuses = {r.report.status for r in self.ranks if r.report is not None}
        return statuses.pop() if len(statuses) == 1 else "mixed"

    def all_findings(self) -> list[Finding]:
        """Cross-rank findings first, then each rank's own (one per rule and line)."""
        seen, out = set(), []
        for f in self.findings + [f for r in self.ranks if r.report for f in r.report.findings]:
            key = (f.rule, f.file, f.line)
            if key not in seen:
                seen.add(key)
                out.append(f)
        return out

    def to_json(self) -> dict[str, Any]:
        return {"schema": DIST_SCHEMA_VERSION, "kind": "distributed", "cgtool_version": self.cgtool_version,
                "script": self.script, "entry": self.entry, "world_size": self.world_size, "status": self.status,
                "wall_s": round(self.wall_s, 2), "launcher": list(self.launcher), "settings": self.settings,
                "step": self.step, "findings": [f.to_json() for f in self.findings],
                "errors": [e.to_json() for e in self.errors], "graph_diffs": self.graph_diffs,
                "outputs": dict(self.outputs), "ranks": [r.to_json() for r in self.ranks]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> DistReport:
        if d.get("schema") != DIST_SCHEMA_VERSION or d.get("kind") != "distributed":
            raise ValueError("not a distributed report of the supported schema")
        return cls(d["script"], d["entry"], int(d["world_size"]), [RankResult.from_json(r) for r in d.get("ranks", [])],
                   [Finding.from_json(f) for f in d.get("findings", [])],
                   [ErrorRecord.from_json(e) for e in d.get("errors", [])], dict(d.get("graph_diffs", {})),
                   dict(d.get("step", {})), dict(d.get("settings", {})), list(d.get("launcher", [])),
                   float(d.get("wall_s", 0.0)), dict(d.get("outputs", {})), d.get("cgtool_version", ""))
