"""A captured graph in the HTML report: cgtool's DOT drawn to SVG by Graphviz's `dot` program (nodes filled by
replay GPU time, clustered by module, each linking to its line in the page's source listing; the page's script
adds zoom and pan), and the node table, which is all a page shows where `dot` is missing."""

from __future__ import annotations

import re
import shutil

from cgtool.errors import CgtoolError
from cgtool.graph.model import Graph
from cgtool.model.node_profile import NodeProfile
from cgtool.render.html_page import esc, table
from cgtool.render.html_source import SourceLines
from cgtool.render.units import fmt_bytes, fmt_us

MAX_TABLE_ROWS = 2000


def node_links(profile: NodeProfile | None, src: SourceLines) -> dict[int, str]:
    """node id -> `#anchor` of the user's line that made it (named in the listing)."""
    if profile is None:
        return {}
    out = {}
    for n in profile.nodes:
        if 0 <= n.frame < len(profile.frames):
            f = profile.frames[n.frame]
            anchor = src.add(f.file, f.line, f.source)
            if anchor:
                out[n.node] = "#" + anchor
    return out


def graph_svg(graph: Graph, profile: NodeProfile | None, links: dict[int, str], prefix: str) -> tuple[str | None, str]:
    """(inline SVG, "") or (None, why not)."""
    if shutil.which("dot") is None:
        return None, ("Graphviz's `dot` program is not on PATH where this page was made, so the graph is not drawn: "
                      "the node table below lists every node (install graphviz and run `cgtool report` again).")
    try:
        from cgtool.render.dot import graph_to_dot
        from cgtool.render.dot_file import render_source

        source = graph_to_dot(graph, lines=profile, links=links).source
        svg = render_source(source, "svg").decode("utf-8", errors="replace")
    except CgtoolError as exc:
        return None, f"The graph could not be drawn: {exc.message}"
    start = svg.find("<svg")
    if start < 0:
        return None, "Graphviz's `dot` wrote no SVG."
    svg = svg[start:]
    # ids unique on a page that holds several graphs (one per rank)
    svg = re.sub(r'\bid="', f'id="{prefix}g-', svg)
    return svg, ""


def heat_key(profile: NodeProfile) -> str:
    from cgtool.render.dot import HEAT

    top = max((n.us or 0.0 for n in profile.nodes), default=0.0)
    cells = "".join(f'<i style="background:{c}"></i>' for c in HEAT)
    return (f'<p class="muted">Nodes are filled by replay GPU time: <span class="heat">{cells}</span> '
            f"0 to {esc(fmt_us(top))} (the slowest node); clusters are the modules that made them. Click a node to "
            "see its line.</p>")


def node_table(graph: Graph, profile: NodeProfile | None, links: dict[int, str]) -> str:
    by_node = {n.node: n for n in profile.nodes} if profile else {}
    rows = []
    for node in graph.nodes[:MAX_TABLE_ROWS]:
        src = by_node.get(node.id)
        where = ""
        if src is not None and profile is not None and 0 <= src.frame < len(profile.frames):
            f = profile.frames[src.frame]
            text = f"{f.file.rsplit('/', 1)[-1]}:{f.line}"
            where = f'<a href="{esc(links[node.id])}">{esc(text)}</a>' if node.id in links else esc(text)
        detail = node.launch if node.kind == "kernel" else (fmt_bytes(node.bytes) if node.bytes is not None else "")
        rows.append([str(node.id), esc(node.kind), f"<code>{esc(node.name)}</code>", esc(detail or ""), where,
                     esc(src.module if src else ""), esc(fmt_us(src.us)) if src and src.us is not None else ""])
    more = (f'<p class="muted">… {len(graph.nodes) - MAX_TABLE_ROWS:,} more nodes not listed.</p>'
            if len(graph.nodes) > MAX_TABLE_ROWS else "")
    return table(["node", "kind", "name", "launch / size", "line", "module", "replay GPU"], rows, numeric=(0, 6)) + more


def graph_html(graph: Graph, profile: NodeProfile | None, src: SourceLines, prefix: str) -> str:
    links = node_links(profile, src)
    svg, why = graph_svg(graph, profile, links, prefix)
    parts = [f'<p>{len(graph.nodes):,} nodes, {len(graph.edges):,} edges, {len(graph.kernels):,} kernels.</p>']
    if profile is not None and svg:
        parts.append(heat_key(profile))
    if svg:
        parts.append('<div class="graph-tools" hidden><button data-z="0.8">zoom in</button>'
                     '<button data-z="1.25">zoom out</button><button data-z="0">fit</button>'
                     '<span class="muted"> wheel to zoom, drag to pan</span></div>')
        parts.append(f'<div class="graph-box">{svg}</div>')
    else:
        parts.append(f'<p class="warnline" id="{esc(prefix)}no-dot">{esc(why)}</p>')
    parts.append(f'<details{"" if svg else " open"}><summary>node table ({len(graph.nodes):,} nodes)</summary>'
                 f"{node_table(graph, profile, links)}</details>")
    return "".join(parts)
