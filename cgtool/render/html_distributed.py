"""A distributed run as HTML: the ranks side by side, the cross-rank findings, the graphs' differences from rank
0, and one tab per rank holding that rank's whole report (or how it ended, when it wrote none)."""

from __future__ import annotations

from collections.abc import Mapping

from cgtool.model.exit_codes import dist_has_problems
from cgtool.model.ranks import DistReport, RankResult
from cgtool.model.rules import CROSS_RANK_RULES, WORLD_OF_ONE
from cgtool.render.distributed import verdict_line
from cgtool.render.html_capture import report_body_html
from cgtool.render.html_findings import (
    errors_html,
    findings_html,
    not_checked_html,
    severity_counts,
)
from cgtool.render.html_page import esc, page, section, table, tabs, top_header, verdict
from cgtool.render.html_source import SourceLines
from cgtool.render.units import fmt_us


def _rank_rows(report: DistReport) -> list[list[str]]:
    rows = []
    for r in report.ranks:
        s = r.summary
        nccl = ", ".join(f"{k}×{v}" for k, v in (s.get("nccl_kernels") or {}).items())
        rows.append([f'<a href="#rank{r.rank}">rank {r.rank}</a>', esc(s.get("status", r.report.status if r.report else "")),
                     esc(r.exit or r.ended), esc(s.get("nodes", "")), esc(s.get("kernels", "")), esc(nccl),
                     esc(fmt_us(s["eager_us"])) if "eager_us" in s else "",
                     esc(fmt_us(s["replay_us"])) if "replay_us" in s else "",
                     esc(f"{s['speedup']:.2f}×") if s.get("speedup") else ""])
    return rows


def _collectives(r: RankResult, src: SourceLines) -> str:
    if not r.collectives:
        return ""
    rows = [[esc(c.phase), str(c.iteration), str(c.index), f"<code>{esc(c.op)}</code>", esc(c.detail),
             {True: "yes", False: "no", None: "?"}[c.capturing],
             src.link(c.frame.file, c.frame.line, f"{c.frame.file.rsplit('/', 1)[-1]}:{c.frame.line}") if c.frame else ""]
            for c in r.collectives[:500]]
    return ("<h3>Collectives</h3>"
            + table(["phase", "iteration", "#", "op", "tensors", "capturing", "line"], rows, numeric=(1, 2)))


def rank_html(r: RankResult, sources: Mapping[str, str]) -> str:
    prefix = f"r{r.rank}-"
    if r.report is not None:
        body = report_body_html(r.report, prefix, sources)
    else:
        body = verdict(f"rank {r.rank} wrote no report: {r.ended} in {r.phase or 'start-up'} ({r.exit or 'no exit status'})",
                       "bad")
        if r.output.strip():
            body += section("Last output", f"<pre>{esc(r.output[-4000:])}</pre>", prefix + "output")
    src = SourceLines(prefix=prefix + "c-")
    coll = _collectives(r, src)
    if coll:
        body += section("Collectives and DDP", coll + (src.listing_html() if src.files else ""), prefix + "coll",
                        str(len(r.collectives)), open_=False)
    return body


def render_distributed_html(report: DistReport, sources: Mapping[str, str] | None = None) -> str:
    """The merged report of a distributed run as one self-contained HTML page."""
    n = report.world_size
    head = top_header(f"cgtool · {report.script}:{report.entry} on {n} rank{'s' if n != 1 else ''}",
                      f"torch.distributed.run, {report.wall_s:.1f} s · status {report.status}")
    problems = dist_has_problems(report)  # the exit code's decision (model/exit_codes.py)
    body = [verdict(verdict_line(report), "bad" if problems else "cpu" if report.status == "cpu-only" else "ok"),
            section("Ranks", table(["rank", "status", "ended", "nodes", "kernels", "NCCL kernels", "eager", "replay",
                                    "speedup"], _rank_rows(report), numeric=(3, 4, 6, 7, 8)), "ranks")]
    src = SourceLines(prefix="x-")
    cross = findings_html(report.findings, src, "No cross-rank finding: every rank made the same collectives.")
    if report.findings and src.files:
        cross += f"<details><summary>lines</summary>{src.listing_html()}</details>"
    body.append(section("Cross-rank findings", cross, "cross", severity_counts(report.findings)))
    if report.errors:
        body.append(section("Launcher errors", errors_html(report.errors, None), "launcher"))
    diffs = []
    for name, diff in report.graph_diffs.items():
        rows = [r for r in diff.get("rows", []) if r.get("delta")]
        if rows:
            diffs.append(f"<h3>{esc(name)} vs rank 0</h3>" + table(["group", "name", "rank 0", esc(name)], [
                [esc(r["group"]), f"<code>{esc(r['name'])}</code>", esc(r["before"]), esc(r["after"])] for r in rows[:200]]))
        else:
            diffs.append(f'<p class="muted">{esc(name)}: the same graph as rank 0 (nodes, kinds, kernels)</p>')
    if diffs:
        body.append(section("Graphs across ranks", "".join(diffs), "diffs"))
    if n == 1:
        body.append(section("Not checked", not_checked_html([], list(CROSS_RANK_RULES), WORLD_OF_ONE), "skipped"))
    body.append(tabs([(f"rank{r.rank}", f"rank {r.rank}" + (" ✘" if r.failed else ""), rank_html(r, sources or {}))
                      for r in report.ranks]))
    return page(f"cgtool · {report.script} ({n} ranks)", head, "".join(body))
