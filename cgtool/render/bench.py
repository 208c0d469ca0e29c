"""Console rendering of a bench report: per-mode table, details, sweep table, comparison, one-line verdict."""

from __future__ import annotations

import math

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cgtool.bench.adaptive import BUDGET, CONVERGED, ITERATIONS, RoundStatus
from cgtool.bench.compare import FASTER, REGRESSED, SLOWER, Comparison
from cgtool.bench.estimate import Estimate, ModeResult
from cgtool.bench.result import FLOOR_KERNELS, FLOOR_REPLAY_GPU, BenchReport, BenchResult
from cgtool.render.units import fmt_bytes, fmt_graph_memory, fmt_us

_STATUS_STYLE = {REGRESSED: "bold red", SLOWER: "yellow", FASTER: "green"}


def fmt_x(x: float) -> str:
    """A speedup: one decimal from 2× up, two below (where 1.03× versus 0.97× matters)."""
    if not math.isfinite(x):
        return "∞×"
    return f"{x:.1f}×" if x >= 2 else f"{x:.2f}×"


def fmt_ci_x(e: Estimate) -> str:
    lo, hi = fmt_x(e.low).rstrip("×"), fmt_x(e.high)
    return f"{e.confidence:.0%} CI {lo}–{hi}"


def fmt_pct(x: float, signed: bool = False) -> str:
    if not math.isfinite(x):
        return "∞" if x > 0 else "-∞"
    return f"{x:+.1%}" if signed else f"{x:.1%}"




def fmt_size(size: int | None) -> str:
    return "-" if size is None else str(size)


def stopped_phrase(result: BenchResult) -> str:
    """Why measuring stopped, e.g. `converged after 4,000 iterations`."""
    n = f"{result.iterations:,} iterations"
    target = f"±{result.target_rel_ci:.1%}" if result.target_rel_ci is not None else None
    worst = f"±{result.worst_rel_ci:.1%}" if math.isfinite(result.worst_rel_ci) else "not yet defined"
    if result.stopped_by == CONVERGED:
        return f"converged after {n}"
    if result.stopped_by == BUDGET:
        return f"time budget ran out after {n} (CI {worst}" + (f", target {target})" if target else ")")
    if result.stopped_by == ITERATIONS:
        return f"after {n}" if target is None else f"stopped at the cap of {n} (CI {worst}, target {target})"
    return f"after {n}"


def speedup_phrase(e: Estimate) -> str:
    if e.low > 1:
        return f"{fmt_x(e.point)} faster ({fmt_ci_x(e)})"
    if e.high < 1:
        return f"{fmt_x(1 / e.point)} slower ({e.confidence:.0%} CI {fmt_x(1 / e.high).rstrip('×')}–{fmt_x(1 / e.low)})"
    return f"no clear difference, {fmt_x(e.point)} ({fmt_ci_x(e)})"


def verdict_line(result: BenchResult, clock: str = "wall") -> str:
    """`eager 690 µs → replay 86 µs per iteration: 8.0× faster (95% CI 7.9–8.1×), converged after 4,000 iterations`."""
    eager, replay = result.eager.clock(clock).median, result.replay.clock(clock).median
    size = f"size {result.size}: " if result.size is not None else ""
    why = result.cpu_load.untrustworthy if result.cpu_load is not None else None
    if why:  # no CI: it would claim a precision this run did not have
        return (f"{size}eager {fmt_us(eager)} → replay {fmt_us(replay)} per iteration: about "
                f"{fmt_x(result.speedup(clock).point)} faster, but not trustworthy on this run: {why}; "
                "run it again when the machine is quieter")
    return f"{size}eager {fmt_us(eager)} → replay {fmt_us(replay)} per iteration: {speedup_phrase(result.speedup(clock))}, {stopped_phrase(result)}"


def sweep_verdict(report: BenchReport, clock: str = "wall") -> str:
    """One line over a sweep: the speedup range, and how many sizes converged."""
    if not report.results:
        return "no size was measured"
    if len(report.results) == 1:
        return verdict_line(report.results[0], clock)
    estimates = [r.speedup(clock) for r in report.results]
    lo, hi = min(e.point for e in estimates), max(e.point for e in estimates)
    best = max(report.results, key=lambda r: r.speedup(clock).point)
    converged = sum(r.stopped_by == CONVERGED for r in report.results)
    sizes = f"sizes {fmt_size(report.results[0].size)}–{fmt_size(report.results[-1].size)}"
    span = f"replay is {fmt_x(lo).rstrip('×')}–{fmt_x(hi)} faster" if all(e.low > 1 for e in estimates) else f"speedup {fmt_x(lo)} to {fmt_x(hi)}"
    return f"{span} across {sizes} (most at size {fmt_size(best.size)}); {converged} of {len(report.results)} sizes converged"


def mode_table(result: BenchResult) -> Table:
    table = Table(title="per-iteration time", title_justify="left")
    for col in ("mode", "clock", "n", "median", "±CI", "IQR", "min", "CV", "outliers"):
        table.add_column(col, justify="left" if col in ("mode", "clock") else "right")
    for mode in result.modes:
        _add_mode_rows(table, mode)
    return table


def _add_mode_rows(table: Table, mode: ModeResult) -> None:
    for clock, s in (("GPU", mode.gpu), ("wall", mode.wall)):
        ci = fmt_pct(s.rel_ci) if s.ci_valid else "n too small"
        table.add_row(mode.mode, clock, f"{s.n:,}", fmt_us(s.median), ci, fmt_us(s.iqr), fmt_us(s.min), fmt_pct(s.cv), str(s.outliers))


def detail_lines(result: BenchResult) -> list[str]:
    """The derived numbers under the table, as sentences."""
    saved = result.overhead_saved_us
    floor = _FLOOR_TEXT[result.floor_source]
    if result.gpu_floor_us is None and result.floor_source == FLOOR_REPLAY_GPU:
        floor = "replay's GPU time, no kernel busy time measured"
    lines = [
        (
            f"speedup: wall {fmt_x(result.speedup_wall.point)} ({fmt_ci_x(result.speedup_wall)}), "
            f"GPU {fmt_x(result.speedup_gpu.point)} ({fmt_ci_x(result.speedup_gpu)})"
        ),
        f"launch overhead saved: {fmt_us(saved.point)} per iteration ({saved.confidence:.0%} CI {fmt_us(saved.low)} to {fmt_us(saved.high)})",
        (
            f"replay runs at {fmt_pct(result.replay_floor_share)} of GPU-bound speed, eager at {fmt_pct(result.eager_floor_share)} "
            f"(floor {fmt_us(result.floor_us)}: {floor})"
        ),
    ]
    graph = [
        f"capture {result.capture_ms:.1f} ms" if result.capture_ms is not None else None,
        f"instantiate {result.instantiate_ms:.1f} ms" if result.instantiate_ms is not None else None,
        pool_text(result),
    ]
    if any(graph):
        lines.append(" · ".join(g for g in graph if g))
    target = f", target ±{result.target_rel_ci:.1%}" if result.target_rel_ci is not None else ""
    worst = f"±{result.worst_rel_ci:.1%}" if math.isfinite(result.worst_rel_ci) else "undefined"
    lines.append(f"measured {result.rounds:,} rounds in {result.elapsed_s:.1f} s; stopped: {result.stopped_by} (widest CI {worst}{target})")
    return lines


_FLOOR_TEXT = {FLOOR_KERNELS: "GPU busy time of the replay's kernels",
               FLOOR_REPLAY_GPU: "replay's GPU time, below its kernels' busy time",
               "replay-wall": "replay's own wall time: replay runs at the floor"}


def pool_text(result: BenchResult) -> str | None:
    """The graph's memory line: the pool split, static buffers, capture peak (or the pool alone, from old JSON)."""
    if result.memory is not None:
        return fmt_graph_memory(result.memory)
    return f"graph pool {fmt_bytes(result.pool_bytes)}" if result.pool_bytes is not None else None


def memory_table(report: BenchReport) -> Table:
    """Per size: what the graph holds, what capturing it took, and the two times (wall)."""
    table = Table(title="memory and capture by size", title_justify="left")
    for col in ("size", "pool reserved", "in live tensors", "capture peak", "capture", "instantiate", "eager", "replay"):
        table.add_column(col, justify="right")
    for r in report.results:
        mem = r.memory
        table.add_row(
            fmt_size(r.size),
            fmt_bytes(r.pool_bytes) if r.pool_bytes is not None else "-",
            fmt_bytes(mem.pool_allocated) if mem else "-",
            fmt_bytes(mem.capture_peak_bytes) if mem and mem.capture_peak_bytes is not None else "-",
            f"{r.capture_ms:.1f} ms" if r.capture_ms is not None else "-",
            f"{r.instantiate_ms:.1f} ms" if r.instantiate_ms is not None else "-",
            fmt_us(r.eager.wall.median),
            fmt_us(r.replay.wall.median),
        )
    return table


def shared_pool_line(report: BenchReport) -> str | None:
    """`8 sizes in one pool, captured largest first: 40.0 MiB (separate pools: 200 MiB, 5.0× more); capture 310 ms`."""
    sp = report.shared_pool
    if sp is None:
        return None
    ratio = f", {sp.separate_reserved / sp.pool_reserved:.1f}× more" if sp.pool_reserved else ""
    return (f"{len(sp.sizes)} sizes in one pool, captured largest first: {fmt_bytes(sp.pool_reserved)} "
            f"({fmt_bytes(sp.pool_allocated)} in live tensors; separate pools: {fmt_bytes(sp.separate_reserved)}{ratio}); "
            f"capture {sp.capture_ms:.0f} ms")


def sweep_table(report: BenchReport, clock: str = "wall") -> Table:
    table = Table(title=f"speedup by size ({'wall' if clock == 'wall' else 'GPU'} time)", title_justify="left")
    for col in ("size", "eager", "replay", "speedup", "95% CI", "GPU speedup", "overhead saved", "floor share", "pool", "stopped by"):
        table.add_column(col, justify="left" if col in ("stopped by",) else "right")
    for r in report.results:
        e = r.speedup(clock)
        table.add_row(
            fmt_size(r.size),
            fmt_us(r.eager.clock(clock).median),
            fmt_us(r.replay.clock(clock).median),
            fmt_x(e.point),
            f"{fmt_x(e.low).rstrip('×')}–{fmt_x(e.high)}",
            fmt_x(r.speedup_gpu.point),
            fmt_us(r.overhead_saved_us.point),
            fmt_pct(r.replay_floor_share),
            fmt_bytes(r.pool_bytes) if r.pool_bytes is not None else "-",
            r.stopped_by,
        )
    return table


def compare_table(comparison: Comparison) -> Table:
    clock = comparison.changes[0].clock if comparison.changes else "gpu"
    table = Table(title=f"replay time against the baseline ({'wall' if clock == 'wall' else 'GPU'})", title_justify="left")
    for col in ("size", "baseline", "now", "change", "95% CI", "speedup then → now", "verdict"):
        table.add_column(col, justify="left" if col == "verdict" else "right")
    for c in comparison.changes:
        style = _STATUS_STYLE.get(c.status, "")
        verdict = f"[{style}]{c.status}[/]" if style else c.status
        table.add_row(
            fmt_size(c.size),
            fmt_us(c.baseline_us),
            fmt_us(c.current_us),
            fmt_pct(c.change.point, signed=True),
            f"{fmt_pct(c.change.low, signed=True)} to {fmt_pct(c.change.high, signed=True)}",
            f"{fmt_x(c.baseline_speedup)} → {fmt_x(c.current_speedup)}",
            verdict,
        )
    return table


def comparison_lines(comparison: Comparison) -> list[str]:
    lines = [f"[yellow]note:[/] {escape(n)}" for n in comparison.notes]
    if comparison.only_in_baseline:
        lines.append(f"[yellow]not measured this time:[/] sizes {', '.join(map(fmt_size, comparison.only_in_baseline))}")
    if comparison.only_in_current:
        lines.append(f"[dim]new sizes, no baseline:[/] {', '.join(map(fmt_size, comparison.only_in_current))}")
    bad = comparison.regressions()
    if bad:
        lines.append(
            f"[bold red]regression:[/] replay is slower beyond the CI and {comparison.pct:g}% at size "
            + ", ".join(f"{fmt_size(c.size)} ({fmt_pct(c.change.point, signed=True)})" for c in bad)
        )
    return lines


def progress_text(p: RoundStatus) -> str:
    """The progress bar's description: `round 12 · 1,200 iterations · CI ±2.3% (target ±1.0%) · 3.2 / 10 s`."""
    ci = f"CI ±{p.worst_rel_ci:.1%}" if math.isfinite(p.worst_rel_ci) else "CI pending"
    target = f" (target ±{p.target_rel_ci:.1%})" if p.target_rel_ci is not None else ""
    return f"round {p.rounds} · {p.iterations:,} iterations · {ci}{target} · {p.elapsed_s:.1f} / {p.budget_s:g} s"


def render_bench(report: BenchReport, out: Console, comparison: Comparison | None = None, quiet: bool = False) -> None:
    """The whole console report; with quiet, only errors, comparison problems and the verdict."""
    from cgtool.render.environment import describe
    from cgtool.render.findings_console import render_errors

    first = report.results[0] if report.results else None
    if not quiet and first is not None:
        out.print(f"[bold]cgtool bench[/] {escape(first.script)}:{escape(first.entry)}")
        if first.environment:
            out.print(f"[dim]{escape(describe(first.environment))}[/]")
        if len(report.results) == 1:
            out.print(mode_table(first))
            for line in detail_lines(first):
                out.print(escape(line), soft_wrap=True)
        else:
            out.print(sweep_table(report))
            out.print(memory_table(report))
            shared = shared_pool_line(report)
            if shared:
                out.print(escape(shared), soft_wrap=True)
    render_errors(list(report.errors), out)
    if comparison is not None:
        if not quiet and comparison.changes:
            out.print(compare_table(comparison))
        for line in comparison_lines(comparison):
            out.print(line, soft_wrap=True)
    out.print(f"[bold]{escape(sweep_verdict(report))}[/]", soft_wrap=True)
    for result in report.results:
        load = load_line(result, sweep=len(report.results) > 1)
        if load:
            out.print(f"[yellow]cpu:[/] {escape(load)}", soft_wrap=True)


def load_line(result: BenchResult, sweep: bool = False) -> str | None:
    """What other load on the CPU did to the measurement (cgtool.bench.cpu_load); None when it did nothing."""
    load = result.cpu_load
    if load is None or load.slowed == 0:
        return None
    size = f"size {result.size}: " if sweep and result.size is not None else ""
    seen = (f"{size}the CPU ran slowed by other load during {fmt_pct(load.slowed_fraction)} of the timed blocks "
            f"(a pure-Python probe up to {fmt_x(load.max_slowdown)} slower)")
    counted = (f"eager {fmt_us(load.all_eager_us)} → replay {fmt_us(load.all_replay_us)}, "
               f"{fmt_x(load.all_speedup)}")
    if load.used_all:
        return (f"{seen}; too few blocks ran at full speed, so all are counted ({counted}): "
                "the speedup will differ on a quieter machine")
    return f"{seen}; those blocks are left out (counting them: {counted})"
