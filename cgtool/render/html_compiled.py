"""The HTML report's sections for torch.compile (the compile calls, dynamo's graph breaks, CUDAGraph Trees'
functions, graphs and skips) and for partial capture (the step's pieces and break points, the module map)."""

from __future__ import annotations

from cgtool.model.compiled import CompiledRun
from cgtool.model.partial import ModuleMap, Piecewise
from cgtool.render import compiled_rows
from cgtool.render.html_page import esc, table
from cgtool.render.html_source import SourceLines
from cgtool.render.units import fmt_bytes, fmt_us


def compiled_html(run: CompiledRun, src: SourceLines) -> str:
    parts = [f"<p><b>step ran as:</b> {esc(run.mode)}</p>"]
    if run.sites:
        parts.append("<h3>Compile calls</h3>")
        parts.append(table(["line", "call", "what", "when", "CUDA graphs"], [
            [src.link(s.file, s.line, f"{s.file.rsplit('/', 1)[-1]}:{s.line}"), f"<code>{esc(s.source)}</code>",
             esc(compiled_rows.site_what(s)), esc(s.phase), "yes" if s.cudagraphs else "no"]
            for s in run.sites]))
    if run.breaks:
        parts.append("<h3>Graph breaks</h3>")
        parts.append(table(["line", "count", "reason", "detail"], [
            [src.link(b.frame.file, b.frame.line, f"{b.frame.file.rsplit('/', 1)[-1]}:{b.frame.line}") if b.frame else "",
             str(b.count), esc(b.reason), esc(b.detail)] for b in run.breaks], numeric=(1,)))
    dynamo = compiled_rows.dynamo_graphs_text(run)
    if dynamo is not None:
        parts.append(f'<p class="muted">{esc(dynamo)}</p>')
    if run.functions:
        parts.append(f"<h3>CUDAGraph Trees: {esc(compiled_rows.trees_text(run))}</h3>")
        rows = [[esc(c) for c in row] for row in compiled_rows.function_rows(run)]
        parts.append(table(compiled_rows.FUNCTION_COLUMNS, rows, numeric=(0, 4, 6)))
    if run.events:
        parts.append("<h3>Skips, re-records and fallbacks</h3>")
        parts.append(table(["what", "count", "reason", "line"], [
            [esc(e.kind), str(e.count), esc(e.reason),
             src.link(e.frame.file, e.frame.line, f"{e.frame.file.rsplit('/', 1)[-1]}:{e.frame.line}") if e.frame else ""]
            for e in run.events], numeric=(1,)))
    if run.graphs:
        parts.append("<h3>The trees' graphs</h3>")
        parts.append(table(["graph", "fn", "nodes", "kernels", "kernels by name", "file"], [
            [str(g.graph_id), str(g.function_id), str(g.nodes), str(g.kernel_nodes),
             esc(g.error) if g.error else "<br>".join(f"<code>{esc(n)}</code> ×{c}" for n, c in g.kernels[:12]),
             esc(g.dot or "")] for g in run.graphs], numeric=(0, 1, 2, 3)))
    share = compiled_rows.kernel_share_text(run)
    if share is not None:
        parts.append(f"<p><b>kernels in graphs:</b> {esc(share)}</p>")
    if run.pool_bytes is not None:
        parts.append(f"<p><b>trees' memory pool:</b> {esc(fmt_bytes(run.pool_bytes))}</p>")
    if run.timings_us:
        parts.append(f"<p><b>timing per step:</b> {esc(compiled_rows.timings_text(run))}</p>")
    parts.extend(f'<p class="muted">{esc(n)}</p>' for n in run.notes)
    return "".join(parts)


def piecewise_html(p: Piecewise, src: SourceLines) -> str:
    parts = [f"<p><b>{esc(p.status)}</b>: {esc(p.method)}</p>"]
    if p.splits:
        parts.append("<h3>Break points</h3>" + table(["line", "rule", "reason"], [
            [src.link(s.frame.file, s.frame.line, f"{s.frame.file.rsplit('/', 1)[-1]}:{s.frame.line}") if s.frame else "",
             esc(s.rule or ""), esc(s.reason)] for s in p.splits]))
    if p.pieces:
        parts.append("<h3>Pieces</h3>" + table(["piece", "kernels", "GPU time", "graph nodes"], [
            [str(x.index), str(x.kernels), esc(fmt_us(x.gpu_us)), str(len(x.graph.nodes)) if x.graph else ""]
            for x in p.pieces], numeric=(0, 1, 2, 3)))
        parts.append(f"<p>{p.kernels_in_graphs} kernels in graphs, {p.kernels_outside} launched outside any graph "
                     "per step</p>")
    if p.replay is not None:
        r = p.replay
        parts.append(f"<p><b>replay</b> of the pieced step {esc(r.verdict)} over {r.steps} step(s) "
                     f"({len(r.tensors)} tensors, max abs error {r.max_abs:.3g})" + (f": {esc(r.note)}" if r.note else "")
                     + "</p>")
    if p.timings is not None:
        parts.append(f"<p><b>eager</b> {esc(fmt_us(p.timings.eager_us))} → <b>pieced</b> "
                     f"{esc(fmt_us(p.timings.replay_us))} ({p.timings.speedup:.2f}×)</p>")
    if p.note:
        parts.append(f'<p class="muted">{esc(p.note)}</p>')
    return "".join(parts)


def modules_html(m: ModuleMap) -> str:
    parts = [f"<p><b>{esc(m.status)}</b>, depth {m.depth}; recommended set: "
             + (", ".join(f"<code>{esc(g)}</code>" for g in m.graphed) or "none") + "</p>"]
    parts.append(table(["module", "type", "status", "kernels", "reason"], [
        [f"<code>{esc(e.path)}</code>", esc(e.type), esc(e.status), "" if e.kernels is None else str(e.kernels),
         esc(e.reason)] for e in m.modules], numeric=(3,)))
    if m.timings is not None:
        parts.append(f"<p><b>eager</b> {esc(fmt_us(m.timings.eager_us))} → <b>with the set graphed</b> "
                     f"{esc(fmt_us(m.timings.replay_us))} ({m.timings.speedup:.2f}×)</p>")
    return "".join(parts)
