"""Draw a sweep: per-iteration times (top, log scale) and speedup with its CI (bottom) against size (log2).

SVG is written by hand (no dependency); PNG goes through matplotlib when it is installed.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from cgtool.bench.result import BenchReport
from cgtool.errors import CgtoolError, ExitCode

EAGER, REPLAY = "#d95f02", "#1b6ca8"  # orange and blue, distinguishable for the colour-blind
WIDTH, HEIGHT = 760, 600
LEFT, RIGHT, TOP, GAP, BOTTOM = 78, 190, 48, 56, 50
Scale = Callable[[float], float]  # data value -> pixel


@dataclass(frozen=True)
class Series:
    label: str
    color: str
    dashed: bool
    points: Sequence[tuple[float, float]]  # (size, value)
    band: Sequence[tuple[float, float, float]] | None = None  # (size, low, high), drawn shaded


def sweep_series(report: BenchReport) -> tuple[list[int], list[Series], list[Series]]:
    """Sizes, the time series (top panel) and the speedup series (bottom panel) of a sweep."""
    results = sorted(report.results, key=lambda r: r.size or 0)
    if not results:
        raise CgtoolError("Nothing to plot: the bench report has no results.", ExitCode.USAGE)
    if any(r.size is None or r.size <= 0 for r in results):
        raise CgtoolError("--plot draws times against size: run a sweep with --sizes (positive sizes).", ExitCode.USAGE)
    sizes = [int(r.size or 0) for r in results]
    times = [
        Series("eager, wall", EAGER, False, [(s, r.eager.wall.median) for s, r in zip(sizes, results)]),
        Series("eager, GPU", EAGER, True, [(s, r.eager.gpu.median) for s, r in zip(sizes, results)]),
        Series("replay, wall", REPLAY, False, [(s, r.replay.wall.median) for s, r in zip(sizes, results)]),
        Series("replay, GPU", REPLAY, True, [(s, r.replay.gpu.median) for s, r in zip(sizes, results)]),
    ]
    wall_band = [(s, r.speedup_wall.low, r.speedup_wall.high) for s, r in zip(sizes, results)]
    speedups = [
        Series("speedup, wall (95% CI)", "#333333", False, [(s, r.speedup_wall.point) for s, r in zip(sizes, results)], wall_band),
        Series("speedup, GPU", "#333333", True, [(s, r.speedup_gpu.point) for s, r in zip(sizes, results)]),
    ]
    return sizes, times, speedups


def plot_sweep(report: BenchReport, path: str | Path, write: Callable[[str, bytes], Any] | None = None) -> Path:
    """Write the sweep chart to path (.svg always works; .png needs matplotlib). Returns the path.
    `write(path, data)` writes the file (the CLI passes its safe writer); by default a plain write."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".svg", ".png"):
        raise CgtoolError(f"--plot writes .svg or .png, not {p.name!r}.", ExitCode.USAGE)
    sizes, times, speedups = sweep_series(report)
    title = _title(report)
    if suffix == ".svg":
        data = render_svg(title, sizes, times, speedups).encode("utf-8")
    else:
        data = _png_bytes(title, sizes, times, speedups)
    if write is not None:
        write(str(p), data)
        return p
    try:
        p.write_bytes(data)
    except OSError as exc:
        raise CgtoolError(f"Cannot write the plot to {p}: {exc.strerror or exc}", ExitCode.ENVIRONMENT) from None
    return p


def plan_series(report: BenchReport, plans: Sequence[tuple[str, Any]]) -> tuple[list[int], list[Series], list[Series]]:
    """The plan chart: pool memory per measured size (top, MiB, log scale), the wall speedup per size (bottom),
    and each plan's captured sizes marked on the speedup curve."""
    from cgtool.bench.size_plan import model_of_report

    model = model_of_report(report)
    sizes = model.sizes
    mib = [(p.size, max(p.pool_bytes, 1) / 2**20) for p in model.points]
    memory = [Series("graph pool (own)", REPLAY, False, mib)]
    if report.shared_pool is not None:
        shared = [(s, model.memory([x for x in sizes if x <= s]) / 2**20) for s in sizes]
        memory.append(Series("shared pool, sizes ≤ x", REPLAY, True, shared))
    curve = [(p.size, p.eager_us / p.replay_us if p.replay_us else 0.0) for p in model.points]
    speed = [Series("speedup, wall", "#333333", False, curve)]
    for (label, plan), color in zip(plans, (EAGER, "#7570b3")):
        marks = [(s, model.value("eager_us", s) / model.value("replay_us", s)) for s in plan.sizes
                 if sizes[0] <= s <= sizes[-1]]
        if marks:
            speed.append(Series(f"{label} ({len(plan.sizes)} sizes)", color, True, marks))
    return sizes, memory, speed


def plot_plan(report: BenchReport, plans: Sequence[tuple[str, Any]], path: str | Path,
              write: Callable[[str, bytes], Any] | None = None) -> Path:
    """Write the plan chart (speedup and memory against size) to path, like plot_sweep."""
    p = Path(path)
    sizes, memory, speed = plan_series(report, plans)
    title = _title(report).replace("cgtool bench", "capture sizes")
    label = "graph pool (MiB)"
    data = (render_svg(title, sizes, memory, speed, label).encode("utf-8") if p.suffix.lower() == ".svg"
            else _png_bytes(title, sizes, memory, speed, label))
    if write is not None:
        write(str(p), data)
    else:
        p.write_bytes(data)
    return p


def _title(report: BenchReport) -> str:
    r = report.results[0]
    gpu = r.environment.get("gpu")
    return f"cgtool bench: {Path(r.script).name}" + (f" on {gpu}" if gpu else "")


def nice_step(span: float, target_ticks: int = 6) -> float:
    """A 1, 2 or 5 × 10^k step giving about target_ticks ticks over span."""
    raw = span / max(1, target_ticks)
    mag = 10.0 ** math.floor(math.log10(raw))
    return min((m * mag for m in (1, 2, 5, 10)), key=lambda step: abs(math.log(step / raw)))


def log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks for a log axis: decades over wide ranges, 1, 2, 5 × 10^k over narrower ones, even steps within one."""
    mults = (1, 2, 5) if hi / lo < 1e3 else (1,)
    ticks = [m * 10**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1) for m in mults]
    ticks = [t for t in ticks if lo <= t <= hi]
    if len(ticks) >= 3:
        return ticks
    step = nice_step(hi - lo, 4)
    return [i * step for i in range(math.ceil(lo / step), math.floor(hi / step) + 1)]


def format_tick(v: float) -> str:
    if v >= 1e4:
        return f"{v:.0e}".replace("e+0", "e")
    return f"{v:g}"


def render_svg(title: str, sizes: list[int], times: list[Series], speedups: list[Series],
               top_label: str = "time per iteration (µs)") -> str:
    panel_h = (HEIGHT - TOP - GAP - BOTTOM) / 2
    plot_w = WIDTH - LEFT - RIGHT
    lo_x, hi_x = math.log2(min(sizes)), math.log2(max(sizes))
    pad = 0.5 if hi_x == lo_x else (hi_x - lo_x) * 0.05

    def x(size: float) -> float:
        return LEFT + (math.log2(size) - lo_x + pad) / (hi_x - lo_x + 2 * pad) * plot_w

    out = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
            'font-family="Helvetica, Arial, sans-serif" font-size="12">'
        ),
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="26" text-anchor="middle" font-size="15" font-weight="bold">{escape(title)}</text>',
    ]
    values = [v for s in times for _, v in s.points if v > 0]
    lo_t, hi_t = min(values) / 1.3, max(values) * 1.3
    top1 = TOP

    def y_time(v: float) -> float:
        return top1 + panel_h - (math.log10(v) - math.log10(lo_t)) / (math.log10(hi_t) - math.log10(lo_t)) * panel_h

    out += _panel(top1, panel_h, plot_w, sizes, x, [(t, y_time(t), format_tick(t)) for t in log_ticks(lo_t, hi_t)], top_label)
    out += _lines(times, x, y_time)
    top2 = TOP + panel_h + GAP
    highs = [h for s in speedups for _, _, h in (s.band or []) if math.isfinite(h)] + [v for s in speedups for _, v in s.points]
    hi_s = max([1.0] + [v for v in highs if math.isfinite(v)]) * 1.1
    step = nice_step(hi_s)

    def y_speed(v: float) -> float:
        return top2 + panel_h - min(v, hi_s) / hi_s * panel_h

    s_ticks = [(i * step, y_speed(i * step), format_tick(round(i * step, 6)) + "×") for i in range(int(hi_s / step) + 1)]
    out += _panel(top2, panel_h, plot_w, sizes, x, s_ticks, "speedup, eager / replay")
    out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y_speed(1):.1f}" y2="{y_speed(1):.1f}" stroke="#999" stroke-dasharray="2 3"/>')
    out += _lines(speedups, x, y_speed)
    out.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 12}" text-anchor="middle">size (log₂ scale)</text>')
    out += _legend(times, LEFT + plot_w + 16, top1 + panel_h / 2 - 10 * (len(times) - 1))
    out += _legend(speedups, LEFT + plot_w + 16, top2 + panel_h / 2 - 10 * (len(speedups) - 1))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _panel(top: float, h: float, w: float, sizes: list[int], x: Scale, y_ticks: list[tuple[float, float, str]], label: str) -> list[str]:
    out = [f'<rect x="{LEFT}" y="{top:.1f}" width="{w:.1f}" height="{h:.1f}" fill="none" stroke="#444"/>']
    for _, y, text in y_ticks:
        out.append(f'<line x1="{LEFT}" x2="{LEFT + w:.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e6e6e6"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(text)}</text>')
    for s in sizes:
        sx = x(s)
        out.append(f'<line x1="{sx:.1f}" x2="{sx:.1f}" y1="{top + h:.1f}" y2="{top + h + 5:.1f}" stroke="#444"/>')
        out.append(f'<text x="{sx:.1f}" y="{top + h + 18:.1f}" text-anchor="middle">{s}</text>')
    cy = top + h / 2
    out.append(f'<text x="18" y="{cy:.1f}" text-anchor="middle" transform="rotate(-90 18 {cy:.1f})">{escape(label)}</text>')
    return out


def _lines(series: list[Series], x: Scale, y: Scale) -> list[str]:
    out = []
    for s in series:
        if s.band:
            upper = [f"{x(sz):.1f},{y(hi):.1f}" for sz, _, hi in s.band]
            lower = [f"{x(sz):.1f},{y(lo):.1f}" for sz, lo, _ in reversed(s.band)]
            out.append(f'<polygon points="{" ".join(upper + lower)}" fill="{s.color}" fill-opacity="0.15" stroke="none"/>')
            for sz, lo, hi in s.band:
                bx = x(sz)
                out.append(f'<path d="M{bx - 4:.1f},{y(lo):.1f}H{bx + 4:.1f}M{bx:.1f},{y(lo):.1f}V{y(hi):.1f}M{bx - 4:.1f},{y(hi):.1f}H{bx + 4:.1f}" stroke="{s.color}" fill="none"/>')
        pts = " ".join(f"{x(sz):.1f},{y(v):.1f}" for sz, v in s.points)
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        out.append(f'<polyline points="{pts}" fill="none" stroke="{s.color}" stroke-width="2"{dash}/>')
        for sz, v in s.points:
            fill = "white" if s.dashed else s.color
            out.append(f'<circle cx="{x(sz):.1f}" cy="{y(v):.1f}" r="3.5" fill="{fill}" stroke="{s.color}" stroke-width="1.5"/>')
    return out


def _legend(series: list[Series], left: float, top: float) -> list[str]:
    out = []
    for i, s in enumerate(series):
        y = top + i * 20
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        out.append(f'<line x1="{left}" x2="{left + 24}" y1="{y:.1f}" y2="{y:.1f}" stroke="{s.color}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{left + 30}" y="{y + 4:.1f}">{escape(s.label)}</text>')
    return out


def _png_bytes(title: str, sizes: list[int], times: list[Series], speedups: list[Series],
               top_label: str = "time per iteration (µs)") -> bytes:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator
    except ImportError:
        raise CgtoolError("A .png plot needs matplotlib: install matplotlib (pip install matplotlib) or use .svg.", ExitCode.ENVIRONMENT) from None
    fig = Figure(figsize=(8.5, 6.5), dpi=150, layout="constrained")
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, sharex=True)
    for ax, group in ((top, times), (bottom, speedups)):
        for s in group:
            xs, ys = [p[0] for p in s.points], [p[1] for p in s.points]
            if s.band:
                ax.fill_between([b[0] for b in s.band], [b[1] for b in s.band], [b[2] for b in s.band], color=s.color, alpha=0.15, linewidth=0)
                err = [[y - b[1] for y, b in zip(ys, s.band)], [b[2] - y for y, b in zip(ys, s.band)]]
                ax.errorbar(xs, ys, yerr=err, fmt="none", ecolor=s.color, capsize=3, linewidth=1)
            ax.plot(xs, ys, color=s.color, linestyle="--" if s.dashed else "-", marker="o", markerfacecolor="white" if s.dashed else s.color, label=s.label)
        ax.grid(True, axis="y", color="#e6e6e6")
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    top.set_yscale("log")
    top.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    top.yaxis.set_minor_locator(NullLocator())
    top.set_ylabel(top_label)
    top.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_tick(v)))
    bottom.axhline(1.0, color="#999", linestyle=":", linewidth=1)
    bottom.set_ylim(bottom=0)
    bottom.set_ylabel("speedup, eager / replay")
    bottom.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    bottom.set_xscale("log", base=2)
    bottom.xaxis.set_major_locator(FixedLocator(sizes))
    bottom.xaxis.set_minor_locator(NullLocator())
    bottom.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    bottom.set_xlabel("size (log₂ scale)")
    fig.suptitle(title, fontweight="bold")
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
