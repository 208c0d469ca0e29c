"""Console rendering of a report's `compiled` section: the mode, the compile calls, the trees' functions and
graphs, skips / re-records / fallbacks with the user's line, the kernel share, pool memory, timing three ways."""

from __future__ import annotations

import os

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cgtool.model.compiled import CompiledRun
from cgtool.render import compiled_rows
from cgtool.render.units import fmt_us


def _where(file: str | None, line: int | None) -> str:
    return f"{os.path.relpath(file)}:{line}" if file and line else ""


def render_compiled(run: CompiledRun, out: Console) -> None:
    out.print(f"[bold]step ran as:[/] {escape(run.mode)}")
    for s in run.sites:
        flag = "CUDA graphs" if s.cudagraphs else "no CUDA graphs"
        what = compiled_rows.site_what(s)
        when = {"load": "at import", "setup": "in setup", "step": "in the step"}.get(s.phase, s.phase)
        lib = " [library]" if s.library else ""
        via = f", reached from {_where(s.called_from.file, s.called_from.line)}" if s.called_from else ""
        out.print(f"  [dim]{escape(_where(s.file, s.line))}{escape(lib)}[/] {escape(s.source)}  "
                  f"[dim]({escape(what)}, {when}, {flag}{escape(via)})[/]", soft_wrap=True)
    for b in run.breaks:
        where = f" at {_where(b.frame.file, b.frame.line)}" if b.frame else ""
        count = f" ×{b.count}" if b.count > 1 else ""
        out.print(f"  [yellow]graph break[/]{count}{escape(where)}: {escape(b.reason)}", soft_wrap=True)
    dynamo = compiled_rows.dynamo_graphs_text(run)
    if dynamo is not None:
        out.print(f"[dim]{dynamo}[/]")
    if run.first_steady_s is not None:
        out.print(f"[bold]time to the first steady step:[/] {run.first_steady_s:.1f} s (compile, autotuning, "
                  "recording: the user's own cost, once per process)")
    if not run.observed or run.captured_by != "trees":
        for note in run.notes:
            out.print(f"[dim]{escape(note)}[/]")
        return
    out.print(f"[bold]CUDAGraph Trees:[/] {compiled_rows.trees_text(run)}")
    if run.functions:
        t = Table(*compiled_rows.FUNCTION_COLUMNS, box=None, pad_edge=False)
        for row in compiled_rows.function_rows(run)[:20]:
            t.add_row(*map(escape, row))
        out.print(t)
        if len(run.functions) > 20:
            out.print(f"[dim]... {len(run.functions) - 20} more functions[/]")
    for e in run.events:
        count = f" ×{e.count}" if e.count > 1 else ""
        where = f" at {_where(e.frame.file, e.frame.line)}" if e.frame else ""
        out.print(f"  [yellow]{e.kind}[/]{count}: {escape(e.reason)}{escape(where)}", soft_wrap=True)
    for g in run.graphs[:8]:
        if g.error:
            out.print(f"  graph {g.graph_id} (fn {g.function_id}): [dim]{escape(g.error)}[/]")
            continue
        names = ", ".join(f"{n}×{c}" if c > 1 else n for n, c in g.kernels[:4])
        more = f", ... {len(g.kernels) - 4} more" if len(g.kernels) > 4 else ""
        out.print(f"  graph {g.graph_id} (fn {g.function_id}): {g.nodes} nodes, {g.kernel_nodes} kernels: "
                  f"{escape(names + more)}", soft_wrap=True)
    share = compiled_rows.kernel_share_text(run)
    if share is not None:
        out.print(f"[bold]kernels in graphs:[/] {share}")
    if run.pool_bytes is not None:
        used = (f" ({run.pool_allocated_bytes / 2**20:.1f} MiB in live tensors)"
                if run.pool_allocated_bytes is not None else "")
        out.print(f"[bold]trees' memory pool:[/] {run.pool_bytes / 2**20:.1f} MiB{used}")
        free = run.pool_bytes - (run.pool_allocated_bytes or 0)
        if run.pool_allocated_bytes is not None and free >= 16 * 2**20 and 2 * free > run.pool_bytes:
            out.print(f"[dim]{free / 2**20:.1f} MiB of it is free cache the pool keeps while the trees live: blocks "
                      "allocated and freed inside the pool by the warmup call and the recordings (with a cold inductor "
                      "cache, autotuning's L2-sized flush buffer among them: a run with a warm cache holds less)[/]")
    if run.timings_us:
        out.print(f"[bold]timing per step:[/] {compiled_rows.timings_text(run)}")
        if run.timing_method:
            out.print(f"[dim]{escape(run.timing_method)}[/]")
    if run.observe_cost is not None:
        out.print(f"[dim]observing cost: ×{run.observe_cost:.2f} step time in the steady state[/]")
    for note in run.notes:
        out.print(f"[dim]{escape(note)}[/]")


def compiled_verdict(run: CompiledRun) -> str:
    t = run.timings_us
    if not run.observed:
        return f"{run.mode}: CUDA graphs, skips and timing need a CUDA device"
    if run.captured_by != "trees":
        return f"{run.mode}: {run.triton_kernels} Triton kernels of {run.kernels_in_graphs or 0} in cgtool's graph"
    share = run.kernel_share
    covered = f", {share:.0%} of kernels in graphs" if share is not None else ""
    head = f"torch.compile recorded {run.graphs_recorded} CUDA graph(s){covered}"
    if "eager" in t and "cudagraphs" in t:
        mid = f" → compiled {fmt_us(t['compiled'])}" if "compiled" in t else ""
        return f"{head}: eager {fmt_us(t['eager'])}{mid} → with CUDA graphs {fmt_us(t['cudagraphs'])} per step"
    return head
