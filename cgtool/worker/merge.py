"""Merge the ranks of a distributed run into one DistReport: per-rank graph summary (nodes, kernels, NCCL
kernels), each rank's graph diffed against rank 0's, the cross-rank checks, and the step time (the
slowest rank sets it: every rank waits for the others in the collectives)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from cgtool.checks.distributed import check_distributed, drop_explained_failures
from cgtool.graph.diff import diff_graphs
from cgtool.graph.model import Graph
from cgtool.model.job import CaptureSettings, Job, settings_to_json
from cgtool.model.ranks import DistReport, RankResult
from cgtool.model.report import ErrorRecord
from cgtool.worker.launch import LaunchOutcome


def nccl_kernels(graph: Graph) -> dict[str, int]:
    """NCCL kernel name → count (kernel nodes whose name contains "nccl")."""
    names = Counter(n.name for n in graph.nodes if n.kind == "kernel" and "nccl" in (n.name + (n.mangled or "")).lower())
    return dict(names.most_common())


def rank_summary(r: RankResult) -> dict[str, Any]:
    rep = r.report
    out: dict[str, Any] = {"status": rep.status if rep else "stopped", "phase": r.phase, "exit": r.exit,
                           "collectives": {p: sum(1 for c in r.collectives if c.phase == p)
                                           for p in dict.fromkeys(c.phase for c in r.collectives)}}
    if rep is not None and rep.graph is not None:
        g = rep.graph
        out.update(nodes=len(g.nodes), edges=len(g.edges), kernels=sum(1 for n in g.nodes if n.kind == "kernel"),
                   nccl_kernels=nccl_kernels(g))
    if rep is not None and rep.replay is not None:
        out["replay"] = rep.replay.status
    if rep is not None and rep.timings is not None:
        t = rep.timings
        out.update(eager_us=t.eager_us, replay_us=t.replay_us, speedup=t.speedup)
    return out


def step_time(ranks: list[RankResult]) -> dict[str, Any]:
    """The distributed step's time: per mode the slowest rank's median (None unless every rank was timed)."""
    timed = [r.report.timings for r in ranks if r.report is not None and r.report.timings is not None]
    if not timed or len(timed) != len(ranks):
        return {}
    eager, replay = max(t.eager_us for t in timed), max(t.replay_us for t in timed)
    return {"eager_us": eager, "replay_us": replay, "speedup": eager / replay if replay > 0 else None,
            "slowest_eager_rank": max(ranks, key=lambda r: r.report.timings.eager_us).rank,  # type: ignore[union-attr]
            "slowest_replay_rank": max(ranks, key=lambda r: r.report.timings.replay_us).rank}  # type: ignore[union-attr]


def merge(job: Job, outcome: LaunchOutcome, settings: CaptureSettings) -> DistReport:
    from cgtool import __version__

    ranks = outcome.ranks
    for r in ranks:
        r.summary = rank_summary(r)
    report = DistReport(job.script, job.entry, len(ranks), ranks, settings=settings_to_json(settings),
                        launcher=list(outcome.command), wall_s=outcome.wall_s, cgtool_version=__version__)
    base = ranks[0].report.graph if ranks and ranks[0].report else None
    for r in ranks[1:]:
        if base is not None and r.report is not None and r.report.graph is not None:
            diff = diff_graphs(base, r.report.graph)
            report.graph_diffs[f"rank {r.rank}"] = {"growth_pct": diff.growth_pct,
                                                    "rows": [row.to_json() for row in diff.changed]}
    report.step = step_time(ranks)
    report.findings = check_distributed(ranks, settings.warmup, job.script)
    drop_explained_failures(ranks, report.findings)
    if outcome.failure is not None:
        phases = ", ".join(f"rank {r.rank} in {r.phase or 'start-up'}" for r in ranks if r.report is None)
        report.errors.append(ErrorRecord("launch", outcome.failure, outcome.message + (f" ({phases})" if phases else "")
                                         + (f"\n{outcome.launcher_output[-1500:]}" if outcome.failure == "launcher" else "")))
    if outcome.leftover:
        report.errors.append(ErrorRecord("launch", "orphan", f"rank processes {outcome.leftover} outlived the launcher; "
                                                             "cgtool killed them"))
    return report
