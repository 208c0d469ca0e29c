"""`cgtool dot FILE`: summarize, render or compare captured graphs (no torch, no GPU)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from cgtool.commands.common import Number
from cgtool.errors import CgtoolError, ExitCode
from cgtool.render.dot_file import DEFAULT_MAX_NODES

if TYPE_CHECKING:
    from cgtool.graph.model import Graph
    from cgtool.graph.summary import GraphSummary
    from cgtool.model.node_profile import NodeProfile


@click.command(name="dot", short_help="Summarize, draw or diff a captured graph (no torch, no GPU).")
@click.argument("file", type=click.Path(dir_okay=True, path_type=str))
@click.option("-o", "--output", metavar="OUT", help="Draw the graph to OUT (.svg, .png, .pdf; .dot writes cgtool's DOT); a FIFO is written once a "
                   "reader opens it (at most 10 s of waiting).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary (or the comparison) as JSON.")
@click.option("--no-fold", is_flag=True, help="Draw every node; do not fold repeated runs into one ×N block.")
@click.option("--max-nodes", type=Number("max_nodes"), default=DEFAULT_MAX_NODES, show_default=True, metavar="N",
              help="Draw at most N nodes (after folding); a note says how many were left out.")
@click.option("--diff", "other", metavar="B", type=click.Path(dir_okay=True, path_type=str),
              help="Compare FILE (before) with B (after): nodes by kind and kernel, edges, depth.")
@click.option("--fail-on-growth", type=Number("fail_on_growth"), metavar="PCT",
              help="With --diff: exit 1 when B has more than PCT percent more nodes than FILE.")
def dot(file: str, output: str | None, as_json: bool, no_fold: bool, max_nodes: int, other: str | None,
        fail_on_growth: float | None) -> None:
    """Make a captured CUDA graph understandable at a glance.

    FILE is cgtool's report.json or graph.dot, or the driver's own DOT dump
    (cudaGraphDebugDotPrint with any flags, as torch's CUDAGraph.debug_dump writes it).

    \b
      cgtool dot graph.dot                  tables: node types, kernels, copies, depth, repeats
      cgtool dot report.json                also replay GPU time by line and by module (when captured)
      cgtool dot graph.dot -o graph.svg     a picture (needs Graphviz's `dot` program)
      cgtool dot old.dot --diff new.dot     what changed between two graphs
      cgtool dot main/report.json --diff pr/report.json --fail-on-growth 5   a CI gate

    Exit codes: 0 done, 1 the graph grew past --fail-on-growth, 2 unreadable input or bad
    arguments, 3 Graphviz missing or the output not writable.
    """
    from cgtool.graph.graph_file import read_graph_file
    from cgtool.graph.summary import summarize
    from cgtool.render.console import console

    if fail_on_growth is not None and other is None:
        raise click.UsageError("--fail-on-growth needs --diff B: it compares two graphs")
    if output and other:
        raise click.UsageError("-o draws one graph; use it without --diff")
    if output:
        from cgtool.render.files import refuse_input

        refuse_input(output, "-o", {file: "the input graph"})
    graph = read_graph_file(file)
    if other is not None:
        _diff(file, summarize(graph), other, as_json, fail_on_growth)
        return
    lines = _node_lines(file)
    if output:
        _draw(graph, output, not no_fold, max_nodes, quiet=as_json, lines=lines)
    if as_json:
        data = summarize(graph).to_json()
        if lines is not None:
            kinds = {n.id: n.kind for n in graph.nodes}
            data["node_lines"] = {by: [{"key": r.key, "nodes": r.nodes, "kernels": r.kernels, "us": round(r.us, 3),
                                        "share": round(r.share, 4)} for r in lines.totals(by, kinds)]
                                  for by in ("line", "source", "module")}
        click.echo(json.dumps(data, indent=2))
    elif not output:
        from cgtool.render.graph_summary import render_summary

        out = console()
        render_summary(summarize(graph), file, out)
        if lines is not None:
            _render_lines(graph, lines, out)


def _node_lines(path: str) -> NodeProfile | None:
    """A report.json's node_lines (each node's line and replay time), None for other files or without them."""
    if not path.endswith(".json"):
        return None
    from cgtool.errors import CgtoolError
    from cgtool.files.inputs import GRAPH, read_json
    from cgtool.model.node_profile import NodeProfile

    try:
        data = read_json(path, GRAPH).get("node_lines")
        return NodeProfile.from_json(data) if isinstance(data, dict) else None
    except (CgtoolError, ValueError, AttributeError, KeyError, TypeError, IndexError):
        return None  # read_graph_file has said what is wrong with the file, if anything


def _render_lines(graph: Graph, lines: NodeProfile, out) -> None:
    from rich.markup import escape

    from cgtool.render.node_lines import coverage_line, line_table

    kinds = {n.id: n.kind for n in graph.nodes}
    out.print(line_table(lines, kinds, "source"))
    if any(n.module for n in lines.nodes):
        out.print(line_table(lines, kinds, "module"))
    out.print(f"[dim]{escape(coverage_line(lines))}[/]")


def _draw(graph: Graph, output: str, fold: bool, max_nodes: int, quiet: bool, lines: NodeProfile | None = None) -> None:
    from cgtool.render.console import console
    from cgtool.render.dot import graph_to_dot
    from cgtool.render.dot_file import output_format, render_file

    output_format(output)  # a bad extension fails before any work
    picture = graph_to_dot(graph, fold=fold, max_nodes=max_nodes, lines=lines)
    render_file(picture.source, output)
    cut = picture.graph_attr.get("cg_truncated")
    note = f"; {int(cut):,} nodes not drawn (raise --max-nodes)" if cut else ""
    console(stderr=quiet).print(f"wrote {output} ({len(graph.nodes):,} nodes{note})", soft_wrap=True)


def _diff(before_path: str, before: GraphSummary, after_path: str, as_json: bool, fail_on_growth: float | None) -> None:
    from cgtool.graph.diff import diff_summaries
    from cgtool.graph.graph_file import read_graph_file
    from cgtool.graph.summary import summarize
    from cgtool.render.console import console

    after = summarize(read_graph_file(after_path))
    d = diff_summaries(before, after)
    if as_json:
        click.echo(json.dumps({"before": before.to_json(), "after": after.to_json(), **d.to_json()}, indent=2))
    else:
        from cgtool.render.graph_summary import render_diff

        render_diff(d, before_path, after_path, console())
    if fail_on_growth is not None and d.growth_pct > fail_on_growth:
        nodes, kernels = d.total("nodes"), d.total("kernels")
        raise CgtoolError(
            f"the graph grew by {d.growth_pct:.1f}% ({nodes.before:,} → {nodes.after:,} nodes, "
            f"{kernels.delta:+,} kernels), more than --fail-on-growth {fail_on_growth:g}%", ExitCode.PROBLEMS)
