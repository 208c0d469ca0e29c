"""Console rendering of a report's `compiled` section: the mode, the compile calls, the trees' functions and
graphs, skips / re-records / fallbacks with the user's line, the kernel share, pool memory, timing three ways."""

from __future__ import annotations

import os

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cgtool.model.compiled import CompiledRun
from cgtool.render.units import fmt_us


def _where(file: str | None, line: int | None) -> str:
    return f"{os.path.relpath(file)}:{line}" if file and line else ""


def render_compiled(run: CompiledRun, out: Console) -> None:
    out.print(f"[bold]step ran as:[/] {escape(run.mode)}")
    for s in run.sites:
        flag = "CUDA graphs" if s.cudagraphs else "no CUDA graphs"
        what = f"{s.form} of {s.target}" if s.target else s.form
        when = {"load": "at import", "setup": "in setup", "step": "in the step"}.get(s.phase, s.phase)
        lib = " [library]" if s.library else ""
        via = f", reached from {_where(s.called_from.file, s.called_from.line)}" if s.called_from else ""
        out.print(f"  [dim]{escape(_where(s.file, s.line))}{escape(lib)}[/] {escape(s.source)}  "
                  f"[dim]({escape(what)}, {when}, {flag}{escape(via)})[/]", soft_wrap=True)
    for b in run.breaks:
        where = f" at {_where(b.frame.file, b.frame.line)}" if b.frame else ""
        count = f" ×{b.count}" if b.count > 1 else ""
        out.print(f"  [yellow]graph break[/]{count}{escape(where)}: {escape(b.reason)}", soft_wrap=True)
    if run.dynamo_graphs is not None:
        out.print(f"[dim]dynamo compiled {run.dynamo_graphs} graph(s) in all (breaks and recompiles add graphs)[/]")
    if run.first_steady_s is not None:
        out.print(f"[bold]time to the first steady step:[/] {run.first_steady_s:.1f} s (compile, autotuning, "
                  "recording: the user's own cost, once per process)")
    if not run.observed or run.captured_by != "trees":
        for note in run.notes:
            out.print(f"[dim]{escape(note)}[/]")
        return
    out.print(f"[bold]CUDAGraph Trees:[/] {run.graphs_recorded} graph(s) recorded by {len(run.functions)} "
              f"function(s) over {run.iterations} calls")
    if run.functions:
        t = Table("fn", "name", "mode", "compile id", "graphs", "key", "re-records", box=None, pad_edge=False)
        for f in run.functions[:20]:
            t.add_row(str(f.function_id), escape(f.name), f.mode, f.compile_id, str(f.graphs),
                      escape(f.symint_key or "-"), str(f.rerecords))
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
    share = run.kernel_share
    if share is not None:
        out.print(f"[bold]kernels in graphs:[/] {run.kernels_in_graphs} of "
                  f"{(run.kernels_in_graphs or 0) + (run.kernels_outside or 0)} per steady step ({share:.0%}); "
                  f"{run.triton_kernels} Triton kernels per step")
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
        parts = [f"{k} {fmt_us(v)}" for k, v in run.timings_us.items()]
        out.print(f"[bold]timing per step:[/] {' · '.join(parts)}")
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
