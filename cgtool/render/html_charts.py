"""Charts as inline SVG, drawn here (no library, nothing fetched): horizontal bars, lines over a size axis
(log2 where sizes double), and which sizes a set captures. Labels are escaped like all page text."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from cgtool.render.html_page import esc

COLOURS = ("#1c7ed6", "#e8590c", "#2b8a3e", "#862e9c", "#c92a2a", "#0b7285")


def hbars(rows: Sequence[tuple[str, float, str]], title: str, colour: str = "#1c7ed6", width: int = 640) -> str:
    """One bar per (label, value, value as text), longest value full width."""
    if not rows:
        return ""
    top = max((v for _, v, _ in rows), default=0.0) or 1.0
    label_w, bar_w, h = 190, width - 190 - 90, 22
    out = [(f'<svg class="chart" role="img" width="{width}" height="{len(rows) * h + 26}" '
            f'viewBox="0 0 {width} {len(rows) * h + 26}"><title>{esc(title)}</title>'
            f'<text x="0" y="14" font-weight="bold">{esc(title)}</text>')]
    for k, (label, value, text) in enumerate(rows):
        y = 22 + k * h
        w = max(1.0, bar_w * max(value, 0.0) / top)
        out.append(f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end">{esc(label)}</text>'
                   f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{h - 8}" fill="{colour}" rx="2"/>'
                   f'<text x="{label_w + w + 5:.1f}" y="{y + 14}">{esc(text)}</text>')
    out.append("</svg>")
    return "".join(out)


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= n:
            step *= m
            break
    first = math.ceil(lo / step) * step
    return [first + k * step for k in range(int((hi - first) / step) + 1)]


def lines(series: Sequence[tuple[str, Sequence[tuple[float, float]]]], title: str, y_label: str,
          fmt_y: Callable[[float], str], x_label: str = "size", width: int = 640, height: int = 260,
          y_zero: bool = True) -> str:
    """Lines with dots over x (log2 axis when every x is positive and they span more than 4×)."""
    pts = [p for _, s in series for p in s]
    if not pts:
        return ""
    xs = sorted({x for x, _ in pts})
    log = xs[0] > 0 and xs[-1] / xs[0] > 4
    fx = (lambda v: math.log2(v)) if log else (lambda v: v)
    x0, x1 = fx(xs[0]), fx(xs[-1])
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    ys = [y for _, y in pts if math.isfinite(y)]
    y0 = 0.0 if y_zero else min(ys)
    y1 = max(ys) * 1.08 if ys else 1.0
    if y1 <= y0:
        y1 = y0 + 1
    left, right, top, bottom = 64, 110, 24, 36
    pw, ph = width - left - right, height - top - bottom

    def px(x: float) -> float:
        return left + pw * (fx(x) - x0) / (x1 - x0)

    def py(y: float) -> float:
        return top + ph * (1 - (y - y0) / (y1 - y0))

    out = [(f'<svg class="chart" role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
            f'<title>{esc(title)}</title><text x="0" y="14" font-weight="bold">{esc(title)}</text>'
            f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fff" stroke="#ced4da"/>')]
    for t in _ticks(y0, y1):
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{py(t):.1f}" y2="{py(t):.1f}" stroke="#f1f3f5"/>'
                   f'<text x="{left - 4}" y="{py(t) + 4:.1f}" text-anchor="end">{esc(fmt_y(t))}</text>')
    for x in xs if len(xs) <= 16 else xs[:: max(1, len(xs) // 12)]:
        out.append(f'<text x="{px(x):.1f}" y="{top + ph + 14}" text-anchor="middle">{esc(f"{x:g}")}</text>')
    out.append(f'<text x="{left + pw / 2:.1f}" y="{height - 4}" text-anchor="middle">'
               f'{esc(x_label + (" (log scale)" if log else ""))}</text>'
               f'<text x="12" y="{top + ph / 2:.1f}" transform="rotate(-90 12 {top + ph / 2:.1f})" '
               f'text-anchor="middle">{esc(y_label)}</text>')
    for k, (name, s) in enumerate(series):
        c = COLOURS[k % len(COLOURS)]
        good = [(x, y) for x, y in sorted(s) if math.isfinite(y)]
        if len(good) > 1:
            d = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in good)
            out.append(f'<polyline points="{d}" fill="none" stroke="{c}" stroke-width="2"/>')
        for x, y in good:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{c}">'
                       f"<title>{esc(name)} at {esc(f'{x:g}')}: {esc(fmt_y(y))}</title></circle>")
        ly = top + 12 + 16 * k
        out.append(f'<rect x="{left + pw + 10}" y="{ly - 9}" width="12" height="4" fill="{c}"/>'
                   f'<text x="{left + pw + 26}" y="{ly - 4}">{esc(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def size_sets(sets: Sequence[tuple[str, Sequence[int]]], title: str, width: int = 640) -> str:
    """Each set's captured sizes as marks on one shared size axis (log2)."""
    sizes = sorted({s for _, ss in sets for s in ss if s > 0})
    if not sizes:
        return ""
    lo, hi = math.log2(sizes[0]), math.log2(sizes[-1])
    hi = hi if hi > lo else lo + 1
    left, right, row = 130, 20, 26
    pw = width - left - right
    height = 40 + row * len(sets)

    def px(s: int) -> float:
        return left + pw * (math.log2(s) - lo) / (hi - lo)

    out = [(f'<svg class="chart" role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
            f'<title>{esc(title)}</title><text x="0" y="14" font-weight="bold">{esc(title)}</text>')]
    for k, (label, ss) in enumerate(sets):
        y = 30 + k * row
        c = COLOURS[k % len(COLOURS)]
        out.append(f'<text x="{left - 8}" y="{y + 4}" text-anchor="end">{esc(label)}</text>'
                   f'<line x1="{left}" x2="{left + pw}" y1="{y}" y2="{y}" stroke="#dee2e6"/>')
        for s in ss:
            if s > 0:
                out.append(f'<rect x="{px(s) - 3:.1f}" y="{y - 8}" width="6" height="16" fill="{c}" rx="1">'
                           f"<title>{esc(label)}: {s}</title></rect>")
    y = 30 + len(sets) * row
    ticks = sizes if len(sizes) <= 12 else [s for s in sizes if s & (s - 1) == 0] or sizes[:: len(sizes) // 8]
    for s in ticks:
        out.append(f'<text x="{px(s):.1f}" y="{y}" text-anchor="middle">{s}</text>')
    out.append("</svg>")
    return "".join(out)
