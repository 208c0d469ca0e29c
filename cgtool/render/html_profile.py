"""The line profile in the HTML report: replay GPU time per line of the user's code (and per module), and the
launch-bound lines with their eager CPU and GPU time next to replay; each line links into the source listing."""

from __future__ import annotations

from cgtool.graph.model import Graph
from cgtool.model.node_profile import NodeProfile
from cgtool.render.html_page import esc, table
from cgtool.render.html_source import SourceLines
from cgtool.render.node_lines import coverage_line
from cgtool.render.units import fmt_us

TOP = 40


def _share_bar(share: float) -> str:
    return f'<span class="bar" style="width:{max(1, round(120 * share))}px"></span> {share:.0%}'


def mark_times(profile: NodeProfile, src: SourceLines) -> None:
    """Each user line's replay GPU time into the listing's gutter."""
    for r in profile.totals("line"):
        if r.frame >= 0:
            f = profile.frames[r.frame]
            src.add(f.file, f.line, f.source)
            src.time(f.file, f.line, r.us)


def profile_html(profile: NodeProfile, graph: Graph, src: SourceLines) -> str:
    kinds = {n.id: n.kind for n in graph.nodes}
    mark_times(profile, src)
    rows = []
    totals = profile.totals("line", kinds)
    for r in totals[:TOP]:
        f = profile.frames[r.frame]
        rows.append([src.link(f.file, f.line, f"{f.file.rsplit('/', 1)[-1]}:{f.line}"), f"<code>{esc(f.source.strip())}</code>",
                     str(r.nodes), str(r.kernels), esc(fmt_us(r.us)), _share_bar(r.share)])
    parts = [f'<p class="muted">{esc(coverage_line(profile))}</p>',
             "<h3>Replay GPU time by your line</h3>",
             table(["line", "source", "nodes", "kernels", "replay GPU", "share"], rows, numeric=(2, 3, 4))]
    if len(totals) > TOP:
        parts.append(f'<p class="muted">… {len(totals) - TOP} more lines.</p>')
    modules = [r for r in profile.totals("module", kinds) if r.key][:TOP]
    if modules:
        parts.append("<h3>By module</h3>")
        parts.append(table(["module", "nodes", "kernels", "replay GPU", "share"],
                           [[f"<code>{esc(r.key)}</code>", str(r.nodes), str(r.kernels), esc(fmt_us(r.us)),
                             _share_bar(r.share)] for r in modules], numeric=(1, 2, 3)))
    if profile.eager:
        parts.append("<h3>Eager versus replay per line</h3><p class=\"muted\">Lines whose eager time was mostly launch "
                     "overhead: the CPU time of the ops that launched their kernels in one profiled eager step passed "
                     "their GPU time; replay runs the same kernels without the launches.</p>")
        erows = []
        for e in profile.eager[:TOP]:
            f = profile.frames[e.frame]
            erows.append([src.link(f.file, f.line, f"{f.file.rsplit('/', 1)[-1]}:{f.line}"),
                          f"<code>{esc(f.source.strip())}</code>", esc(fmt_us(e.cpu_us)), esc(fmt_us(e.gpu_us)),
                          esc(fmt_us(e.replay_us))])
        parts.append(table(["line", "source", "eager CPU", "eager GPU", "replay GPU"], erows, numeric=(2, 3, 4)))
    return "".join(parts)
