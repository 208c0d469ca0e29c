"""Console tables for `cgtool dot`: a graph summary, and the comparison of two graphs."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cgtool.graph.diff import GraphDiff
from cgtool.graph.summary import GraphSummary
from cgtool.render.dot import kind_word
from cgtool.render.units import fmt_bytes

MAX_KERNEL_ROWS = 25
_SOURCE = {"driver-dot": "driver DOT", "cgtool-dot": "cgtool DOT", "cuda": "CUDA", "json": "JSON"}


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def headline(s: GraphSummary, path: str) -> str:
    graphs = f" in {s.counts['graphs']} graphs" if s.counts["graphs"] > 1 else ""
    return (f"[bold]{escape(path)}[/]: {_plural(s.nodes, 'node')}, {_plural(s.edges, 'edge')}{graphs} "
            f"[dim](read as {_SOURCE.get(s.source, s.source)})[/]")


def shape_line(s: GraphSummary) -> str:
    """Depth, width, roots and leaves of the top-level graph, each with what it means."""
    return (f"top-level graph: depth [bold]{s.depth:,}[/] [dim](longest dependency chain)[/], "
            f"width [bold]{s.width:,}[/] [dim](most nodes side by side)[/], "
            f"{_plural(s.roots, 'root')}, {_plural(s.leaves, 'leaf').replace('leafs', 'leaves')}")


def render_summary(s: GraphSummary, path: str, out: Console) -> None:
    out.print(headline(s, path), soft_wrap=True)
    out.print(shape_line(s))
    out.print(kinds_table(s))
    if s.kernels:
        out.print(kernels_table(s))
    if s.copies:
        out.print(copies_table(s))
    if s.repeats:
        out.print(repeats_table(s))


def kinds_table(s: GraphSummary) -> Table:
    t = Table(title="Nodes by type", title_justify="left")
    t.add_column("count", justify="right")
    t.add_column("type")
    for kind, n in s.counts["by_kind"].items():
        t.add_row(f"{n:,}", kind_word(kind))
    return t


def kernels_table(s: GraphSummary) -> Table:
    t = Table(title="Kernels by name", title_justify="left")
    t.add_column("count", justify="right")
    t.add_column("kernel", overflow="fold", ratio=1)
    t.add_column("launch dims", no_wrap=True)
    for k in s.kernels[:MAX_KERNEL_ROWS]:
        launches = [escape(dims) + (f" ×{n:,}" if len(k.launches) > 1 else "") for dims, n in k.launches[:4]]
        if len(k.launches) > 4:
            launches.append(f"[dim]… {len(k.launches) - 4} more[/]")
        t.add_row(f"{k.count:,}", escape(k.name), "\n".join(launches))
    if len(s.kernels) > MAX_KERNEL_ROWS:
        rest = s.kernels[MAX_KERNEL_ROWS:]
        t.add_row(f"{sum(k.count for k in rest):,}", f"[dim]… {len(rest)} more names (--json lists all)[/]", "")
    return t


def copies_table(s: GraphSummary) -> Table:
    t = Table(title="Memory copies and sets", title_justify="left")
    t.add_column("type")
    t.add_column("direction")
    t.add_column("count", justify="right")
    t.add_column("bytes", justify="right")
    for c in s.copies:
        t.add_row(c.kind, c.direction or "-", f"{c.count:,}", "not in the dump" if c.bytes is None else fmt_bytes(c.bytes))
    return t


def repeats_table(s: GraphSummary) -> Table:
    t = Table(title="Repeated structure", title_justify="left")
    t.add_column("repeats", justify="right")
    t.add_column("block (in order)", overflow="fold")
    t.add_column("nodes", justify="right")
    for r in s.repeats:
        where = f" [dim](graph {r.graph})[/]" if r.graph else ""
        word = "kernel" if set(r.kinds) == {"kernel"} else "node"
        what = f"block of {_plural(len(r.block), word)}{where}: " + " → ".join(escape(n) for n in r.block)
        t.add_row(f"×{r.count:,}", what, f"{r.nodes:,}")
    return t


def render_diff(d: GraphDiff, before: str, after: str, out: Console) -> None:
    nodes, kernels = d.total("nodes"), d.total("kernels")
    growth = "" if nodes.before == 0 else f" ({d.growth_pct:+.1f}% nodes)"
    out.print(f"[bold]{escape(after)}[/] against [bold]{escape(before)}[/]: "
              f"{_signed(nodes.delta)} nodes, {_signed(kernels.delta)} kernels{growth}")
    t = Table(title="Changes", title_justify="left")
    t.add_column("", style="dim")
    t.add_column("what", overflow="fold", ratio=1)
    t.add_column("before", justify="right")
    t.add_column("after", justify="right")
    t.add_column("change", justify="right")
    last_group = None
    for r in d.changed:
        group = {"total": "graph", "kind": "type", "kernel": "kernel"}.get(r.group, r.group)
        if last_group is not None and r.group != last_group:
            t.add_section()
        name = kind_word(r.name) if r.group == "kind" else r.name
        style = "green" if r.delta < 0 else "red" if r.delta > 0 else "dim"
        t.add_row(group if r.group != last_group else "", escape(name), f"{r.before:,}", f"{r.after:,}",
                  f"[{style}]{_signed(r.delta)}[/]")
        last_group = r.group
    out.print(t)


def _signed(n: int) -> str:
    return f"+{n:,}" if n > 0 else f"{n:,}" if n < 0 else "±0"
