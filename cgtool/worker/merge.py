"""Merge the ranks of a distributed run into one DistReport: per-rank graph summary (nodes, kernels, NCCL
kernels), each rank's graph diffed against rank 0's, the cross-rank checks, and the step time (the
slowest rank sets it: every rank waits for the others in the collectives)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from cgtool.checks.distributed import check_distributed, drop_explained_failures
from cgtool.graph.diff import diff_graphs
from cgtool.graph.model import Graph
from cgtool.model.job import CaptureSettings, Job
from cgtool.model.ranks import DistReport, RankResult
from cgtool.model.report import ErrorRecord, Report
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
    if rep is not None and rep.compiled is not None and rep.compiled.observed:
        c = rep.compiled  # torch.compile's CUDAGraph Trees on this rank: graphs, kernels in them, graph breaks
        out.update(graphs=c.graphs_recorded, kernels=c.kernels_in_graphs, breaks=len(c.breaks))
    times = rank_times(rep) if rep is not None else None
    if times is not None:
        eager, replay = times
        out.update(eager_us=eager, replay_us=replay, speedup=eager / replay if replay > 0 else None)
    return out


def rank_times(rep: Report) -> tuple[float, float] | None:
    """(eager, replay) µs per step of one rank: cgtool's replay, or for a step compiled with CUDA graphs the step
    as compiled (torch.compile's trees replaying) against eager; None when the rank was not timed."""
    if rep.timings is not None:
        return rep.timings.eager_us, rep.timings.replay_us
    t = rep.compiled.timings_us if rep.compiled is not None else {}
    if "eager" in t and "cudagraphs" in t:
        return t["eager"], t["cudagraphs"]
    return None


def step_time(ranks: list[RankResult]) -> dict[str, Any]:
    """The distributed step's time: per mode the slowest rank's median (None unless every rank was timed)."""
    timed = [(r.rank, t) for r in ranks if r.report is not None and (t := rank_times(r.report)) is not None]
    if not timed or len(timed) != len(ranks):
        return {}
    eager, replay = max(t[0] for _, t in timed), max(t[1] for _, t in timed)
    return {"eager_us": eager, "replay_us": replay, "speedup": eager / replay if replay > 0 else None,
            "slowest_eager_rank": max(timed, key=lambda rt: rt[1][0])[0],
            "slowest_replay_rank": max(timed, key=lambda rt: rt[1][1])[0]}


def merge(job: Job, outcome: LaunchOutcome, settings: CaptureSettings) -> DistReport:
    from cgtool import __version__

    ranks = outcome.ranks
    for r in ranks:
        r.summary = rank_summary(r)
    report = DistReport(job.script, job.entry, len(ranks), ranks, settings=settings.to_json(),
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
