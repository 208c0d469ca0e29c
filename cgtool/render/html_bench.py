"""A bench report as HTML: the verdict, eager and replay per size with their CIs (table and charts), what each
graph holds in memory, and the capture-size plan with its chart, from the bench JSON's `plan` section."""

from __future__ import annotations

from typing import Any

from cgtool.bench.result import BenchReport, BenchResult
from cgtool.render.bench import (
    detail_lines,
    fmt_pct,
    fmt_size,
    fmt_x,
    load_line,
    shared_pool_line,
    sweep_verdict,
)
from cgtool.render.environment import describe
from cgtool.render.html_charts import hbars, lines, size_sets
from cgtool.render.html_findings import errors_html
from cgtool.render.html_page import (
    cards,
    esc,
    page,
    para,
    section,
    table,
    top_header,
    verdict,
)
from cgtool.render.units import fmt_bytes, fmt_us


def _modes_html(r: BenchResult) -> str:
    rows = []
    for mode in r.modes:
        for clock, s in (("GPU", mode.gpu), ("wall", mode.wall)):
            rows.append([esc(mode.mode), clock, f"{s.n:,}", esc(fmt_us(s.median)),
                         esc(fmt_pct(s.rel_ci) if s.ci_valid else "n too small"), esc(fmt_us(s.iqr)),
                         esc(fmt_us(s.min)), esc(fmt_pct(s.cv)), str(s.outliers)])
    return (table(["mode", "clock", "n", "median", "±CI", "IQR", "min", "CV", "outliers"], rows, numeric=range(2, 9))
            + hbars([(f"{m.mode} {c}", m.clock(c).median, fmt_us(m.clock(c).median)) for m in r.modes for c in ("gpu", "wall")],
                    "median per iteration")
            + "".join(para(line) for line in detail_lines(r)))


def _sweep_html(report: BenchReport) -> str:
    rows = []
    for r in report.results:
        e = r.speedup("wall")
        rows.append([esc(fmt_size(r.size)), esc(fmt_us(r.eager.wall.median)), esc(fmt_us(r.replay.wall.median)),
                     esc(fmt_x(e.point)), esc(f"{fmt_x(e.low).rstrip('×')}–{fmt_x(e.high)}"), esc(fmt_x(r.speedup_gpu.point)),
                     esc(fmt_us(r.overhead_saved_us.point)), esc(fmt_bytes(r.pool_bytes) if r.pool_bytes is not None else "-"),
                     esc(r.stopped_by)])
    sized = [r for r in report.results if r.size is not None]
    charts = ""
    if len(sized) >= 2:
        charts = (lines([("eager", [(r.size, r.eager.wall.median) for r in sized if r.size is not None]),
                         ("replay", [(r.size, r.replay.wall.median) for r in sized if r.size is not None])],
                        "wall time per iteration by size", "time", fmt_us)
                  + lines([("speedup (wall)", [(r.size, r.speedup_wall.point) for r in sized if r.size is not None]),
                           ("speedup (GPU)", [(r.size, r.speedup_gpu.point) for r in sized if r.size is not None])],
                          "replay speedup by size", "speedup", lambda v: f"{v:.1f}×")
                  + hbars([(f"size {r.size}", float(r.pool_bytes), fmt_bytes(r.pool_bytes)) for r in sized
                           if r.pool_bytes is not None], "graph pool by size"))
    shared = shared_pool_line(report)
    return (table(["size", "eager", "replay", "speedup", "95% CI", "GPU speedup", "overhead saved", "pool", "stopped by"],
                  rows, numeric=range(8)) + charts + (para(shared) if shared else ""))


def _plan_html(plan: dict[str, Any]) -> str:
    sets = plan.get("sets", [])
    budget = plan.get("budget_bytes")
    memory = any(s["memory_bytes"] for s in sets)  # a sweep without pools (or capture times) plans without them
    capture = any(s["capture_ms"] for s in sets)
    rows = [[esc(s["label"]), esc(", ".join(map(str, s["sizes"]))),
             esc(fmt_bytes(int(s["memory_bytes"]))) if memory else "–",
             esc(f"{s['capture_ms']:.0f} ms") if capture else "–", esc(fmt_us(s["mean_us"])), esc(f"{s['speedup']:.2f}×"),
             "extrapolated" if s.get("extrapolated") else ""] for s in sets]
    head = para(f"For the expected batches{f', within a memory budget of {fmt_bytes(int(budget))}' if budget else ''}: "
                "every batch is padded up to the next captured size; batches above the largest run eager.")
    chart = (size_sets([(s["label"], s["sizes"]) for s in sets], "captured sizes of each set")
             + (hbars([(s["label"], float(s["memory_bytes"]), fmt_bytes(int(s["memory_bytes"]))) for s in sets],
                      "graph memory of each set", colour="#862e9c") if memory else
                para("The sweep measured no graph memory, so the sets' memory is not drawn.", "muted"))
             + hbars([(s["label"], float(s["speedup"]), f"{s['speedup']:.2f}×") for s in sets],
                     "mean speedup over the batches", colour="#2b8a3e"))
    return head + table(["set", "sizes", "memory", "capture", "mean step", "speedup", ""], rows,
                        numeric=(2, 3, 4, 5)) + chart


def render_bench_html(report: BenchReport, plan: dict[str, Any] | None = None) -> str:
    """The bench report as one self-contained HTML page; `plan`: the bench JSON's `plan` section, when it has one."""
    first = report.results[0] if report.results else None
    title = f"cgtool bench · {first.script}:{first.entry}" if first else "cgtool bench"
    head = top_header(title, describe(first.environment) if first and first.environment else "")
    ok = bool(report.results) and not report.errors
    body = [verdict(sweep_verdict(report), "ok" if ok else "bad")]
    if first is not None:
        best = max(report.results, key=lambda r: r.speedup_wall.point)
        body.append(cards([(fmt_x(best.speedup_wall.point), f"best wall speedup (size {fmt_size(best.size)})"),
                           (str(len(report.results)), "sizes measured"),
                           (fmt_us(best.overhead_saved_us.point), "launch overhead saved per iteration")]))
    if report.errors:
        body.append(section("Errors", errors_html(list(report.errors), None), "errors", str(len(report.errors))))
    if len(report.results) == 1:
        body.append(section("Eager versus replay", _modes_html(report.results[0]), "modes"))
    elif report.results:
        body.append(section("Eager versus replay by size", _sweep_html(report), "sweep"))
    if plan and plan.get("sets"):
        body.append(section("Capture-size plan", _plan_html(plan), "plan"))
    loads = [line for r in report.results if (line := load_line(r, sweep=len(report.results) > 1))]
    if loads:
        body.append(section("CPU load", "".join(para(x, "warnline") for x in loads), "cpu"))
    rows = [[esc(k), f"<code>{esc(v)}</code>"] for k, v in report.settings.items()]
    body.append(section("Settings", table(["", ""], rows), "settings", open_=False))
    return page(title, head, "".join(body))
