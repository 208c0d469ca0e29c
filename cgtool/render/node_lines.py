"""The lines that hold a graph's replay GPU time, as a console table (`capture`, `dot`) and as markdown."""

from __future__ import annotations

import os

from rich.console import JustifyMethod
from rich.markup import escape
from rich.table import Table

from cgtool.model.node_profile import LineTotal, NodeProfile
from cgtool.render.units import fmt_us

TOP = 10


def short_where(path: str, line: int) -> str:
    """`modeling_llama.py:123` for a library file, the path as given for the user's."""
    shown = os.path.basename(path) if "site-packages" in path or "dist-packages" in path else path
    return f"{shown}:{line}"


def line_rows(profile: NodeProfile, kinds: dict[int, str], by: str, top: int = TOP) -> list[tuple[str, str, str, str, str]]:
    """(line or module, source text, nodes, replay GPU time, share) of the `top` rows, most time first."""
    rows = []
    for r in profile.totals(by, kinds)[:top]:
        rows.append((_label(profile, r), _source(profile, r), f"{r.nodes} ({r.kernels} kernels)", fmt_us(r.us),
                     f"{r.share:.0%}"))
    return rows


def _label(profile: NodeProfile, r: LineTotal) -> str:
    if r.frame < 0:
        return r.key or "(no module)"
    f = profile.frames[r.frame]
    return short_where(f.file, f.line)


def _source(profile: NodeProfile, r: LineTotal) -> str:
    return profile.frames[r.frame].source.strip() if r.frame >= 0 else ""


def coverage_line(profile: NodeProfile) -> str:
    """"142 of 145 kernel nodes mapped to a line; 5 replays: 812 µs of nodes, 830 µs of GPU time per replay"."""
    text = f"{profile.kernels_mapped} of {profile.kernels} kernel nodes mapped to a line"
    if profile.unmapped:
        text += " (not mapped: " + "; ".join(f"{n} {why}" for why, n in profile.unmapped.items()) + ")"
    if profile.replays:
        text += (f"; {profile.replays} profiled replays: {fmt_us(profile.timed_us)} in timed nodes of "
                 f"{fmt_us(profile.replay_us)} GPU time per replay")
    return text


def line_table(profile: NodeProfile, kinds: dict[int, str], by: str = "source", top: int = TOP) -> Table:
    what = {"line": "your line", "source": "line (the library's where a library issued the op)",
            "module": "module"}[by]
    table = Table(title=f"replay GPU time by {what}", title_justify="left")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("line" if by != "module" else "module", "left"), ("source", "left"), ("nodes", "right"),
        ("replay GPU", "right"), ("share", "right"))
    for name, justify in columns:
        table.add_column(name, justify=justify)
    for row in line_rows(profile, kinds, by, top):
        table.add_row(*(escape(c) for c in row))
    return table


def line_markdown(profile: NodeProfile, kinds: dict[int, str], by: str = "source", top: int = 5) -> str:
    out = ["| line | source | nodes | replay GPU | share |", "| --- | --- | ---: | ---: | ---: |"]
    for row in line_rows(profile, kinds, by, top):
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    return "\n".join(out)


def eager_rows(profile: NodeProfile, top: int = TOP) -> list[tuple[str, str, str, str, str]]:
    """(line, source, eager CPU, eager GPU, replay GPU) of the launch-bound lines (NodeProfile.eager)."""
    rows = []
    for e in profile.eager[:top]:
        f = profile.frames[e.frame]
        rows.append((short_where(f.file, f.line), f.source.strip(), fmt_us(e.cpu_us), fmt_us(e.gpu_us),
                     fmt_us(e.replay_us)))
    return rows


EAGER_TITLE = "launch-bound lines: eager CPU over eager GPU time"
EAGER_COLUMNS = ("line", "source", "eager CPU", "eager GPU", "replay GPU")


def eager_table(profile: NodeProfile, top: int = TOP) -> Table:
    table = Table(title=EAGER_TITLE, title_justify="left")
    for i, name in enumerate(EAGER_COLUMNS):
        table.add_column(name, justify="left" if i < 2 else "right")
    for row in eager_rows(profile, top):
        table.add_row(*(escape(c) for c in row))
    return table


def eager_markdown(profile: NodeProfile, top: int = 5) -> str:
    out = ["| " + " | ".join(EAGER_COLUMNS) + " |", "| --- | --- | ---: | ---: | ---: |"]
    for row in eager_rows(profile, top):
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    return "\n".join(out)


SLOWER_TITLE = "lines slower in replay than eager (GPU time)"
SLOWER_COLUMNS = ("line", "source", "eager GPU", "replay GPU", "replay/eager", "kernels")


def slower_rows(profile: NodeProfile, top: int = TOP) -> list[tuple[str, str, str, str, str, str]]:
    """(line, source, eager GPU, replay GPU, ratio, same or other kernels) of NodeProfile.slower."""
    rows = []
    for s in profile.slower[:top]:
        f = profile.frames[s.frame]
        rows.append((short_where(f.file, f.line), f.source.strip(), fmt_us(s.eager_us), fmt_us(s.replay_us),
                     f"{s.replay_us / s.eager_us:.2f}×", s.cause))
    return rows


def slower_table(profile: NodeProfile, top: int = TOP) -> Table:
    table = Table(title=SLOWER_TITLE, title_justify="left")
    for i, name in enumerate(SLOWER_COLUMNS):
        table.add_column(name, justify="left" if i < 2 or i == 5 else "right")
    for row in slower_rows(profile, top):
        table.add_row(*(escape(c) for c in row))
    return table


def slower_causes(profile: NodeProfile, top: int = TOP) -> list[str]:
    """One sentence per slower line: `file:line: replay runs other kernels (…) than eager (…): …`."""
    out = []
    for s in profile.slower[:top]:
        f = profile.frames[s.frame]
        spans = [short_where(profile.frames[k].file, profile.frames[k].line) for k in s.spans[:4]]
        also = f" (the stretch where the kernels differ also holds {', '.join(spans)})" if spans else ""
        out.append(f"{short_where(f.file, f.line)}: {s.explain()}{also}")
    return out
