"""Console rendering of a distributed run (DistReport): one row per rank, the collectives per rank, the
graphs' differences from rank 0, the cross-rank and per-rank findings, the step time; and its files."""

from __future__ import annotations

import os

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cgtool.model.exit_codes import dist_has_problems, replay_failed
from cgtool.model.ranks import DistReport
from cgtool.model.rules import CROSS_RANK_RULES, WORLD_OF_ONE
from cgtool.render.json_text import json_text
from cgtool.render.units import fmt_us


def verdict_line(report: DistReport) -> str:
    """One line for the run: the step's speedup when every rank was timed, then whatever fails it — ranks that
    diverged or did not capture, a replay check that failed on a rank that captured — never hidden by the speedup."""
    s = report.step
    n = report.world_size
    ranks = f"{n} rank{'s' if n != 1 else ''}"
    compiled = [r for r in report.ranks if r.report is not None and r.report.status == "compiled"]
    captured = [r for r in report.ranks if r.report is not None and r.report.status == "captured"]
    parts = []
    if s.get("speedup"):
        if len(compiled) == n:  # torch.compile's CUDA graphs on every rank: its trees replay, cgtool captured nothing
            gain = f"{s['speedup']:.1f}× faster" if s["speedup"] >= 1.05 else f"{s['speedup']:.2f}×, no faster than eager"
            parts.append(f"{ranks} ran compiled with CUDA graphs (torch.compile's trees); step (slowest rank) eager "
                         f"{fmt_us(s['eager_us'])} → as compiled {fmt_us(s['replay_us'])}: {gain}")
        else:
            parts.append(f"{ranks} captured; step (slowest rank) eager {fmt_us(s['eager_us'])} → replay "
                         f"{fmt_us(s['replay_us'])}: {s['speedup']:.1f}× faster")
    elif compiled and not any(r.failed for r in compiled):
        parts.append(f"rank(s) {', '.join(str(r.rank) for r in compiled)} ran compiled with CUDA graphs")
    apart = next((r.divergence for r in report.ranks if r.divergence), None)
    if apart:
        parts.append(f"the ranks' collectives diverge at collective #{int(apart.get('index', 0)) + 1} (CG601); "
                     f"cgtool stopped every rank {report.wall_s:.1f} s after launch")
    uncaptured = [r.rank for r in report.ranks if r not in captured and r.failed]
    if uncaptured:
        parts.append(f"rank(s) {', '.join(map(str, uncaptured))} of {n} did not capture")
    if captured and not s.get("speedup"):
        parts.append(f"rank(s) {', '.join(str(r.rank) for r in captured)} captured")
    for r in captured:  # a rank that captured is captured, whatever the replay check or a later phase says
        rep = r.report
        assert rep is not None
        if replay_failed(rep.replay):
            assert rep.replay is not None
            what = "differs from eager" if rep.replay.status == "mismatch" else f"check failed: {rep.replay.note}"
            parts.append(f"rank {r.rank}: replay {what}")
        elif rep.errors:
            parts.append(f"rank {r.rank}: {rep.errors[0].phase} failed after capture")
    return "; ".join(parts) if parts else f"{ranks}: {report.status}"


def rank_table(report: DistReport) -> Table:
    t = Table(title="ranks", title_justify="left")
    for col in ("rank", "status", "ended", "nodes", "kernels", "NCCL kernels", "collectives", "replay", "eager",
                "replay time", "speedup"):
        t.add_column(col, justify="right" if col in ("rank", "nodes", "kernels", "speedup") else "left",
                     overflow="fold")
    for r in report.ranks:
        s = r.summary
        nccl = ", ".join(f"{k}×{v}" for k, v in (s.get("nccl_kernels") or {}).items()) or ("-" if "nodes" in s else "")
        coll = " ".join(f"{p}:{c}" for p, c in (s.get("collectives") or {}).items())
        t.add_row(str(r.rank), s.get("status", ""), f"{r.phase} ({r.exit})" if r.report is None else r.exit,
                  f"{s['graphs']} graphs" if "graphs" in s else str(s.get("nodes", "")), str(s.get("kernels", "") or ""), escape(nccl[:60]), coll, s.get("replay", ""),
                  fmt_us(s["eager_us"]) if "eager_us" in s else "", fmt_us(s["replay_us"]) if "replay_us" in s else "",
                  f"{s['speedup']:.2f}×" if s.get("speedup") else "")
    return t


def render_dist_report(report: DistReport, out: Console, quiet: bool = False) -> None:
    from cgtool.render.findings_console import render_errors, render_findings

    if not quiet:
        out.print(f"[bold]cgtool[/] {escape(report.script)}:{escape(report.entry)} on {report.world_size} "
                  f"rank{'s' if report.world_size != 1 else ''} "
                  f"[dim](torch.distributed.run, {report.wall_s:.1f} s)[/]")
        out.print(rank_table(report))
        for name, diff in report.graph_diffs.items():
            rows = [r for r in diff["rows"] if r["delta"]]
            if rows:
                out.print(f"[bold]{name} vs rank 0:[/] " + ", ".join(
                    f"{r['group']} {escape(r['name'])} {r['before']}→{r['after']}" for r in rows[:8]))
            else:
                out.print(f"[dim]{name}: the same graph as rank 0 (nodes, kinds, kernels)[/]")
    findings = report.all_findings()
    if findings:
        render_findings(findings, out)
    render_errors(report.errors, out)
    for r in report.ranks:
        if r.report is not None and r.report.errors:
            out.print(f"[bold]rank {r.rank}:[/]")
            render_errors(r.report.errors, out)
    if report.world_size == 1:
        out.print(f"[yellow]Not checked in a world of one rank ({WORLD_OF_ONE}): {', '.join(CROSS_RANK_RULES)}[/]")
    problems = dist_has_problems(report)  # the exit code's decision (model/exit_codes.py)
    out.print(f"[bold {'red' if problems else 'green'}]{escape(verdict_line(report))}[/]")


def dist_files(report: DistReport) -> dict[str, str]:
    """name → text of the files a distributed capture writes: report.json (merged) and rank<r>/report.json."""
    files = {"report.json": json_text(report.to_json())}
    for r in report.ranks:
        if r.report is not None:
            files[os.path.join(f"rank{r.rank}", "report.json")] = json_text(r.report.to_json())
    return files
