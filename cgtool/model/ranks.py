"""Records of a distributed run (`--nproc-per-node N`): what each rank's collectives and DDP wrappers were,
how each rank ended, and the merged report (docs/report-schema.md, "Distributed report")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cgtool.model.codec import Record, meta
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


@dataclass(frozen=True)
class Collective(Record):
    """One torch.distributed call a rank made (recorded before it ran, so a call that hangs is recorded too)."""

    JSON_ORDER = ("index", "phase", "iteration", "op", "detail", "capturing", "frame")

    index: int  # order among this rank's calls in `phase`
    phase: str  # warmup, capture (the captured iteration), replay-check, timing, setup, ...
    op: str  # e.g. all_reduce, broadcast, barrier
    detail: str = ""  # shapes and dtypes of the tensors, the reduce op: "float32[64,512] SUM"
    capturing: bool | None = None  # the stream it was issued on was capturing (None: unknown)
    frame: Frame | None = None  # the user's line
    iteration: int = -1  # which call of the step (0-based over the whole run); -1 outside a step


@dataclass(frozen=True)
class DdpWrap(Record):
    """A DistributedDataParallel construction: where, and whether the current stream was the default stream."""

    frame: Frame | None
    on_default_stream: bool | None  # None: unknown (CPU run)


@dataclass
class RankResult(Record):
    """One rank: its own report (None when it was stopped first) and what its event file recorded."""

    JSON_ORDER = ("rank", "ended", "phase", "exit", "summary", "facts", "collectives", "ddp", "report", "output",
                  "divergence")

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


@dataclass
class DistReport(Record):
    """The merged report of N ranks: per rank, across ranks (findings, graph diffs), the step time."""

    JSON_ORDER = ("schema", "kind", "cgtool_version", "script", "entry", "world_size", "status", "wall_s", "launcher",
                  "settings", "step", "findings", "errors", "graph_diffs", "outputs", "ranks")
    JSON_COMPUTED = {"schema": lambda _: DIST_SCHEMA_VERSION, "kind": lambda _: "distributed",
                     "status": lambda r: r.status}

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
    wall_s: float = field(default=0.0, metadata=meta(write=lambda s: round(s, 2)))
    outputs: dict[str, str] = field(default_factory=dict)
    cgtool_version: str = ""

    @classmethod
    def json_in(cls, d: Any) -> Mapping[str, Any]:
        if not isinstance(d, Mapping) or d.get("schema") != DIST_SCHEMA_VERSION or d.get("kind") != "distributed":
            raise ValueError("not a distributed report of the supported schema")
        return d

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
