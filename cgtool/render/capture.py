"""Console rendering of a capture report: environment, graph summary, replay check, findings, verdict."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cgtool.graph.model import Graph
from cgtool.model.finding import CONFIRMED, EVIDENCE, NOT_REACHED, REFUTED, UNTESTED
from cgtool.model.report import (CAPTURE_FAILED, CAPTURED, COMPILED, CPU_ONLY, CPU_SKIPPED, SCRIPT_ERROR, WORKER_FAILED,
                                 Report)
from cgtool.model.report_parts import ReplayCheck
from cgtool.render.units import fmt_graph_memory, fmt_us


def verdict_line(report: Report) -> str:
    t = report.timings
    if report.compiled is not None and report.status in (COMPILED, CPU_ONLY):
        from cgtool.render.compiled import compiled_verdict

        return compiled_verdict(report.compiled)
    if report.status == CAPTURED and t is not None:
        before = "eager"
        if report.compiled is not None:  # cgtool captured code compiled without CUDA graphs
            before = "torch.compile without CUDA graphs"
        return (f"{before} {fmt_us(t.eager_us)} → replay {fmt_us(t.replay_us)} per iteration: "
                f"{t.speedup:.1f}× faster")
    if report.status == SCRIPT_ERROR or report.status not in (CAPTURED, CAPTURE_FAILED, CPU_ONLY, WORKER_FAILED):
        phase = report.errors[0].phase if report.errors else ""
        return {"load": "the script could not be loaded: nothing ran",
                "setup": "setup() raised: the step never ran, nothing was captured",
                "inputs": "inputs() raised: nothing was captured"}.get(
            phase, f"the step raised{f' during {phase}' if phase else ''}: nothing was captured")
    return {
        CAPTURED: "captured (timing skipped)",
        CAPTURE_FAILED: "capture failed",
        CPU_ONLY: "no CUDA device: the CPU analysis ran; capture, graph, replay check and speedup need a GPU",
        WORKER_FAILED: "the worker did not finish",
    }[report.status]


def render_report(report: Report, out: Console, quiet: bool = False) -> None:
    from cgtool.render.environment import describe
    from cgtool.render.findings_console import render_errors, render_findings

    if not quiet:
        out.print(f"[bold]cgtool[/] {escape(report.script)}:{escape(report.entry)}")
        if report.environment:
            out.print(f"[dim]{escape(describe(report.environment))}[/]")
        if report.graph is not None:
            g = report.graph
            out.print(f"[bold]captured graph:[/] {len(g.nodes):,} nodes, {len(g.edges):,} edges")
            out.print(graph_table(g))
            kt = kernel_table(g)
            if kt is not None:
                out.print(kt)
        if report.node_lines is not None and report.graph is not None:
            from cgtool.render.node_lines import coverage_line, line_table

            kinds = {n.id: n.kind for n in report.graph.nodes}
            out.print(line_table(report.node_lines, kinds))
            out.print(f"[dim]{escape(coverage_line(report.node_lines))}[/]")
            if report.node_lines.eager:
                from cgtool.render.node_lines import eager_table

                out.print(eager_table(report.node_lines))
            if report.node_lines.slower:
                from cgtool.render.node_lines import slower_causes, slower_table

                out.print(slower_table(report.node_lines))
                for cause in slower_causes(report.node_lines):
                    out.print(f"[dim]{escape(cause)}[/]", soft_wrap=True)
        if report.replay is not None:
            render_replay(report.replay, out)
        if report.memory is not None:
            out.print(f"[bold]memory:[/] {escape(fmt_graph_memory(report.memory))}", soft_wrap=True)
        if report.compiled is not None:
            from cgtool.render.compiled import render_compiled

            render_compiled(report.compiled, out)
        if report.piecewise is not None or report.modules is not None:
            from cgtool.render.partial import render_modules, render_piecewise

            if report.piecewise is not None:
                render_piecewise(report.piecewise, out)
            if report.modules is not None:
                render_modules(report.modules, out)
    render_errors(report.errors, out)
    if report.findings:
        render_findings(report.findings, out)
        judged = evidence_line(report)
        if judged and not quiet:
            out.print(f"[dim]{escape(judged)}[/]", soft_wrap=True)
    if not quiet and report.status == CPU_ONLY:
        render_cpu_analysis(report, out)
    if not quiet:
        for s in report.skipped:
            if report.status == CPU_ONLY and s.code == CPU_SKIPPED.code:
                continue  # render_cpu_analysis said what a GPU adds
            out.print(f"[yellow]skipped:[/] {escape(s.text)}")
        if report.script_output.strip() and (report.errors or report.status == WORKER_FAILED):
            tail = "\n".join(report.script_output.rstrip().splitlines()[-15:])
            out.print("[dim]last output of the script:[/]")
            out.print(escape(tail), style="dim")
        for path in report.outputs.values():
            out.print(f"[dim]wrote {escape(path)}[/]")
    colour = "green" if report.status in (CAPTURED, COMPILED) and not _has_problems(report) else "red"
    if report.status == CPU_ONLY:
        colour = "yellow"
    out.print(f"[bold {colour}]{escape(verdict_line(report))}[/]")
    if report.piecewise is not None or report.modules is not None:
        from cgtool.render.partial import partial_verdict

        out.print(f"[bold]{escape(partial_verdict(report))}[/]")


def render_cpu_analysis(report: Report, out: Console) -> None:
    """On a machine without a GPU: what the CPU analysis checked and found, and what a GPU run adds."""
    from cgtool.model.rules import GPU_ONLY_RULES

    counts = {sev: sum(1 for f in report.findings if f.severity == sev) for sev in ("error", "warning", "info")}
    found = ", ".join(f"{n} {sev if sev != 'info' else 'note'}{'s' if n != 1 else ''}" for sev, n in counts.items() if n)
    warmup = report.settings.get("warmup")
    ran = f"{warmup} warmup iterations traced on CPU" if isinstance(warmup, int) else "warmup traced on CPU"
    result = f"[bold]{escape(found)}[/] (above)" if found else "[green]no hazard found[/]"
    out.print(f"[bold]CPU analysis[/] (what `cgtool lint` checks: syncs, shapes, control flow, streams, RNG, "
              f"host inputs): {ran}: {result}")
    out.print(f"[dim]On a CUDA machine, capture also records the step as a graph and reads it (nodes, kernels, "
              f"launch dims), checks replay against eager, and times both; rules {', '.join(GPU_ONLY_RULES)} "
              f"need that.[/]")


def _has_problems(report: Report) -> bool:
    from cgtool.model.exit_codes import replay_failed

    return replay_failed(report.replay) or bool(report.errors) or any(f.severity == "error" for f in report.findings)


def graph_table(g: Graph) -> Table:
    counts = g.count_by_kind()
    table = Table()
    table.add_column("node kind")
    table.add_column("count", justify="right")
    for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        table.add_row(kind, str(n))
    return table


def kernel_table(g: Graph, top: int = 10) -> Table | None:
    from collections import Counter

    kernels = g.kernels
    if not kernels:
        return None
    by_name = Counter(n.name for n in kernels)
    launch: dict[str, set[str]] = {}
    for n in kernels:
        launch.setdefault(n.name, set()).add(n.launch)
    table = Table(title=f"top kernels ({len(by_name)} distinct)", title_justify="left")
    table.add_column("kernel")
    table.add_column("count", justify="right")
    table.add_column("launch <<<grid,block,smem>>>")
    for name, count in by_name.most_common(top):
        dims = sorted(launch[name])
        table.add_row(escape(name), str(count), escape(dims[0] + (f" (+{len(dims) - 1} more)" if len(dims) > 1 else "")))
    if len(by_name) > top:
        table.add_row(f"… {len(by_name) - top} more", str(sum(c for _, c in by_name.most_common()[top:])), "")
    return table


def render_replay(r: ReplayCheck, out: Console) -> None:
    if r.status == "match":
        out.print(f"[green]replay matches eager[/] on {escape(r.inputs)}: {len(r.tensors)} tensors, "
                  f"max abs error {r.max_abs:.3g}, max rel error {r.max_rel:.3g}")
        noise = max((t.noise_abs for t in r.tensors), default=0.0)
        if noise > 0:
            out.print(f"[dim]two eager runs from the same state differ by up to {noise:.3g} (nondeterministic "
                      "kernels); replay is held to the dtype's tolerance or 4× that[/]", soft_wrap=True)
    elif r.status == "mismatch":
        out.print(f"[red]replay differs from eager[/] on {escape(r.inputs)}" + (f": {escape(r.note)}" if r.note else ""))
        table = Table(show_header=True)
        for col in ("tensor", "shape", "dtype", "max abs", "max rel", "eager vs eager"):
            table.add_column(col)
        for t in [t for t in r.tensors if not t.ok][:10]:
            table.add_row(escape(t.name), str(list(t.shape)), t.dtype, f"{t.max_abs:.3g}", f"{t.max_rel:.3g}",
                          f"{t.noise_abs:.3g}")
        if table.rows:
            out.print(table)
    else:
        out.print(f"[yellow]replay check {r.status}[/]: {escape(r.note)}")


def evidence_line(report: Report) -> str | None:
    """How the real capture judged the trace's findings: `trace findings against the real capture: 1
    confirmed, 2 refuted (shown as info), 0 not tested`; None when no finding was judged (CPU run)."""
    counts = {k: sum(f.evidence == k for f in report.findings)
              for k in EVIDENCE}
    if not any(counts.values()):
        return None
    unreached = f", {counts[NOT_REACHED]} not reached" if counts[NOT_REACHED] else ""
    return (f"trace findings against the real capture: {counts[CONFIRMED]} confirmed, {counts[REFUTED]} "
            f"refuted (shown as info), {counts[UNTESTED]} not tested{unreached}")
