"""Console rendering of partial capture: the pieced step (split points, pieces, kernels in graphs, replay,
speedup), the module map, and the verdict line that names the best option with its measured number."""

from __future__ import annotations

from rich.console import Console, JustifyMethod
from rich.markup import escape
from rich.table import Table

from cgtool.model.partial import CPU_ONLY, GRAPHED, MEASURED, NOT_POSSIBLE, ModuleEntry, ModuleMap, Piecewise
from cgtool.model.report import CAPTURE_FAILED, CAPTURED, Report
from cgtool.render.plan import plan_calls
from cgtool.render.units import fmt_bytes, fmt_us


def render_piecewise(p: Piecewise, out: Console) -> None:
    out.print("[bold]piecewise capture[/]" + (" (CPU analysis: split points only)" if p.status == CPU_ONLY else ""))
    for s in p.splits:
        where = f"line {s.frame.line} (`{s.frame.source.split('  #', 1)[0].strip()}`)" if s.frame else "a library frame"
        out.print(f"  split at {escape(where)}: {escape(s.reason)}" + (f" [{s.rule}]" if s.rule else ""))
    if not p.splits and p.status != CPU_ONLY:
        out.print("  no graph break: dynamo kept the step in one piece")
    if p.error is not None:
        out.print(f"  [red]failed:[/] {escape(p.error.label + p.error.message)}")
    if p.status == NOT_POSSIBLE:
        out.print(f"  [yellow]{escape(p.note)}[/]")
        return
    if p.status != MEASURED:
        if p.note:
            out.print(f"  [dim]{escape(p.note)}[/]")
        return
    table = Table(title=f"{len(p.pieces)} graph(s) per step", title_justify="left")
    columns: tuple[tuple[str, JustifyMethod], ...] = (("piece", "left"), ("kernels", "right"), ("GPU time", "right"),
                                                      ("graph nodes", "right"))
    for col, just in columns:
        table.add_column(col, justify=just)
    for piece in p.pieces:
        table.add_row(str(piece.index), str(piece.kernels), fmt_us(piece.gpu_us),
                      str(len(piece.graph.nodes)) if piece.graph else "-")
    table.add_row("outside graphs", str(p.kernels_outside), fmt_us(p.gpu_us_outside), "")
    out.print(table)
    if p.outside:
        out.print("  eager between pieces: " + escape(", ".join(f"{n} ×{c}" for n, c in p.outside[:5])))
    for skip in p.skips:
        out.print(f"  [yellow]left eager by the backend:[/] {escape(skip)}")
    share = p.kernel_share
    if share is not None:
        ts = p.time_share
        out.print(f"  {share:.0%} of kernels in graphs" + (f", {ts:.0%} of kernel time" if ts is not None else ""))
    if p.pool_bytes is not None:
        used = f" ({fmt_bytes(p.pool_allocated_bytes)} in live tensors)" if p.pool_allocated_bytes is not None else ""
        out.print(f"  memory: the pieces share one pool of {fmt_bytes(p.pool_bytes)}{used}")
    _replay_and_time(p.replay, p.timings, out, "pieced step")
    if p.timings is not None and p.timings.speedup < 1.0:
        out.print(f"  [yellow]{escape(SLOWER)}: not recommended[/]")
    if p.note:
        out.print(f"  [dim]{escape(p.note)}[/]")


def render_modules(m: ModuleMap, out: Console) -> None:
    out.print(f"[bold]module map[/] (depth {m.depth})" + (" (CPU analysis)" if m.status == CPU_ONLY else ""))
    if m.error is not None:
        out.print(f"  [red]failed:[/] {escape(m.error.label + m.error.message)}")
    table = Table()
    for col in ("module", "type", "status", "why / graph"):
        table.add_column(col)
    colours = {"graphed": "green", "clean": "green", "fails": "red", "skipped": "yellow", "not-called": "dim",
               "diverges": "red"}
    for e in m.modules:
        detail = e.reason
        if e.status == GRAPHED:
            detail = ("forward + backward" if e.training else "forward") + (
                f", {e.kernels} kernels" if e.kernels is not None else "") + (
                f", {_modes(e)}" if _modes(e) else "") + (f"; {e.reason}" if e.reason else "")
        table.add_row("  " * e.depth + escape(e.path), escape(e.type),
                      f"[{colours.get(e.status, 'white')}]{e.status}[/]", escape(detail))
    if m.modules:
        out.print(table)
    if m.tried_replay is not None:
        left = [p for p in m.tried if p not in m.graphed]
        _replay_and_time(m.tried_replay, None, out, "step with all " + str(len(m.tried)) + " graphed")
        out.print(f"  left out, each differs from eager when graphed alone: {escape(', '.join(f'`{p}`' for p in left))}")
    if m.graphed:
        _replay_and_time(m.replay, m.timings, out, "step with " + ", ".join(f"`{p}`" for p in m.graphed) + " graphed")
    if m.note:
        out.print(f"  [dim]{escape(m.note)}[/]")
    calls = plan_calls(m) if m.replay is not None and m.replay.status == "match" else []
    if calls:
        out.print("  [bold]plan[/] (paste after setup; modules-plan.py has it whole, with its helper `graph_module`):")
        for line in calls:
            out.print("    " + escape(line), highlight=False)


def _modes(e: ModuleEntry) -> str:
    """The modes the module was captured under, as its call ran: "bf16 autocast", "no grad"."""
    c = e.call
    if c is None:
        return ""
    parts = [f"{c.autocast} autocast"] if c.autocast else []
    if c.inference:
        parts.append("inference mode")
    elif not c.grad_enabled:
        parts.append("no grad")
    return ", ".join(parts)


def _replay_and_time(replay, timings, out: Console, what: str) -> None:  # noqa: ANN001 - report parts
    if replay is not None:
        colour = {"match": "green", "mismatch": "red"}.get(replay.status, "yellow")
        out.print(f"  [{colour}]replay of the {escape(what)} {escape(replay.verdict)}[/] "
                  f"({len(replay.tensors)} tensors, max abs error {replay.max_abs:.3g})"
                  + (f": {escape(replay.note)}" if replay.note else ""))
    if timings is not None:
        out.print(f"  eager {fmt_us(timings.eager_us)} → {escape(what)} {fmt_us(timings.replay_us)}: "
                  f"[bold]{timings.speedup:.2f}×[/] ({escape(timings.method)})")


SLOWER = ("slower than eager for this step: its pieces are too small for graph replay to pay off (graph "
          "launches and dynamo's guards between pieces cost more than the launches they save)")


def partial_verdict(report: Report) -> str:
    """"whole step: fails at line 30 (`.item()`); piecewise: 2 graphs, 94% of kernels, 3.4× faster than eager;
    graphing `encoder` and `head`: 2.1×" — only measured numbers."""
    parts = [_whole(report)]
    p = report.piecewise
    if p is not None and p.status == MEASURED:
        text = f"piecewise: {len(p.pieces)} graph{'s' if len(p.pieces) != 1 else ''}"
        if p.kernel_share is not None:
            text += f", {p.kernel_share:.0%} of kernels"
        if p.replay is not None and p.replay.status == "mismatch":  # unsafe
            text += (f", {p.timings.speedup:.1f}×" if p.timings is not None else "") + (
                f" — but the pieced step's replay differs from eager (max abs error {p.replay.max_abs:.3g}): "
                "unsafe, not recommended")
        elif p.timings is not None and p.timings.speedup < 1.0:
            text += f", {p.timings.speedup:.1f}× — {SLOWER.split(' (', 1)[0]}; not recommended"
        elif p.timings is not None:
            text += f", {p.timings.speedup:.1f}× faster than eager"
        if p.replay is not None and p.replay.status not in ("match", "mismatch"):
            text += f" (replay {p.replay.status})"
        parts.append(text)
    elif p is not None and p.status == NOT_POSSIBLE:
        parts.append(p.note or "piecewise not possible")
    elif p is not None and p.status == CPU_ONLY:
        lines = sorted({s.frame.line for s in p.splits if s.frame})
        parts.append(f"piecewise: would split at line{'s' if len(lines) != 1 else ''} {', '.join(map(str, lines))}"
                     if lines else "piecewise: no split point found on CPU")
    m = report.modules
    if m is not None and m.graphed:
        names = " and ".join(f"`{g}`" for g in m.graphed) if len(m.graphed) <= 3 else f"{len(m.graphed)} modules"
        text = f"graphing {names}"
        if m.timings is not None:
            text += f": {m.timings.speedup:.1f}×"
        if m.replay is not None and m.replay.status == "mismatch":
            text += f" — but replay differs from eager (max abs error {m.replay.max_abs:.3g}): unsafe, not recommended"
        elif m.replay is not None and m.replay.status != "match":
            text += f" (replay {m.replay.status})"
        elif m.replay is not None:
            text += ", matches eager: recommended (modules-plan.py)"
        left = [p for p in m.tried if p not in m.graphed]
        if left:
            text += f"; left out: {', '.join(f'`{p}`' for p in left[:3])} (differs from eager when graphed)"
        parts.append(text)
    elif m is not None and m.tried:
        parts.append(f"no module set recommended: {', '.join(f'`{p}`' for p in m.tried[:3])} differs from eager when "
                     "graphed")
    elif m is not None and m.status == CPU_ONLY:
        clean = [e.path for e in m.modules if e.status == "clean"]
        parts.append(f"modules without error findings: {', '.join(f'`{c}`' for c in clean[:4])}" if clean
                     else "no module free of error findings")
    return "; ".join(parts)


def _whole(report: Report) -> str:
    if report.status == CAPTURED and report.timings is not None:
        return f"whole step: {report.timings.speedup:.1f}×"
    err = next((e for e in report.errors if e.phase == "capture"), None)
    f = err.user_frame if err is not None else None
    if f is None:
        f_ = next((x for x in report.findings if x.severity == "error" and x.line), None)
        if f_ is not None:
            return f"whole step: {'fails' if report.status == CAPTURE_FAILED else 'unsafe'} at line {f_.line} " \
                   f"(`{(f_.source or '').split('  #', 1)[0].strip()}`)"
        return f"whole step: {report.status}"
    return f"whole step: fails at line {f.line} (`{f.source.split('  #', 1)[0].strip()}`)"
