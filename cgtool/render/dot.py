"""cgtool's picture of a graph as DOT (graph.dot); rendering DOT to SVG/PNG/PDF is in render/dot_file.py.

Nodes are coloured by kind (PALETTE), kernels show short names and launch dims, child graphs are
clusters, and long repeated runs fold into one cluster labelled ×N. The `cg_*` attributes written
here (see graph/cgtool_dot.py) let `cgtool dot graph.dot` read the same Graph back.
"""

from __future__ import annotations

from typing import Any

# The `graphviz` package, imported on first use: it costs ~50 ms of start-up that `cgtool dot`'s tables do not
# need. A declared dependency; without it the CLI still starts and says what is missing.
graphviz: Any = None

from cgtool.graph.cgtool_dot import FORMAT, encode, encode_ids, node_attrs
from cgtool.graph.folding import Repeat, find_repeats
from cgtool.graph.model import Graph, GraphNode
from cgtool.graph.topology import Adjacency, nodes_by_graph, topo_order
from cgtool.model.node_profile import NodeProfile
from cgtool.render.dot_file import DEFAULT_MAX_NODES, graphviz_package
from cgtool.render.units import fmt_bytes, fmt_us


# kind -> (fill colour, shape). The one palette for every picture cgtool draws.
PALETTE: dict[str, tuple[str, str]] = {
    "kernel": ("#cfe2ff", "box"),
    "memcpy": ("#ffd8a8", "box"),
    "memset": ("#fff3bf", "box"),
    "host": ("#ffc9c9", "box"),
    "graph": ("#e9ecef", "box3d"),
    "empty": ("#ffffff", "circle"),
    "event_record": ("#e5dbff", "ellipse"),
    "event_wait": ("#e5dbff", "ellipse"),
    "sema_signal": ("#d0bfff", "ellipse"),
    "sema_wait": ("#d0bfff", "ellipse"),
    "mem_alloc": ("#d3f9d8", "box"),
    "mem_free": ("#b2f2bb", "box"),
    "batch_mem_op": ("#ffe8cc", "box"),
    "conditional": ("#fcc2d7", "diamond"),
    "unknown": ("#dee2e6", "box"),
}


def kind_word(kind: str) -> str:
    """How tables and the picture's key name a node kind."""
    return "child graph" if kind == "graph" else kind.replace("_", " ")


def graph_to_dot(graph: Graph, fold: bool = True, max_nodes: int = DEFAULT_MAX_NODES,
                 lines: NodeProfile | None = None, links: dict[int, str] | None = None) -> graphviz.Digraph:
    """The graph as a graphviz.Digraph (`.source` is the DOT text). With `fold`, each run found by
    graph.folding.find_repeats is drawn once as a cluster; past `max_nodes` drawn nodes the rest is
    left out and a note says how many (such a file cannot be read back). With `lines` (report.json's
    node_lines), each node also names its line and replay GPU time, and timed nodes are filled by time."""
    _need_graphviz()
    marks = _NodeLines.of(lines)
    if links:  # node id -> the URL each node links to (the HTML report's anchor of its line)
        marks = marks or _NodeLines({}, {})
        marks.href = links
    adj = Adjacency.of(graph)
    repeats = find_repeats(graph, adj) if fold else []
    hidden = {m for r in repeats for m in r.members[r.period :]}
    drawn = [n for ids in nodes_by_graph(graph).values() for n in topo_order(graph, adj, ids) if n not in hidden]
    cut = drawn[max_nodes:]
    shown = set(drawn[:max_nodes])
    title = f"{len(graph.nodes):,} nodes, {len(graph.edges):,} edges"
    if repeats:
        title += f" · {len(repeats)} repeated run{'s' if len(repeats) > 1 else ''} folded"
    dot = graphviz.Digraph("cgtool", graph_attr={
        "cg_format": FORMAT, "cg_source": encode(graph.source), "label": _title(graph, title), "labelloc": "t",
        "fontname": "Helvetica", "fontsize": "12", "compound": "true", "pad": "0.3", "nodesep": "0.25", "ranksep": "0.3",
    }, node_attr={"fontname": "Helvetica", "fontsize": "10", "style": "filled", "penwidth": "0.8",
                  "margin": "0.12,0.04", "height": "0.3"},
        edge_attr={"color": "#495057", "arrowsize": "0.6"})
    if cut:
        dot.graph_attr["cg_truncated"] = str(len(cut))
    by_graph = _draw_nodes(dot, graph, repeats, shown, marks)
    _draw_edges(dot, graph, repeats, hidden, shown)
    _draw_child_links(dot, graph, by_graph, shown)
    if cut:
        dot.node("more", graphviz.nohtml(f"… {len(cut):,} more nodes not drawn (--max-nodes {max_nodes})"),
                 shape="note", style="", fillcolor="")
    return dot


class _NodeLines:
    """Per node: the line to print under it and its fill colour by replay GPU time (white to red, by the share of
    the slowest node's time)."""

    def __init__(self, text: dict[int, str], fill: dict[int, str], module: dict[int, str] | None = None) -> None:
        self.text, self.fill = text, fill
        self.module = module or {}  # node id -> the module path that made it (clusters, to MODULE_DEPTH parts)
        self.href: dict[int, str] = {}  # node id -> the URL the node links to (graph_to_dot's `links`)

    @classmethod
    def of(cls, profile: NodeProfile | None) -> _NodeLines | None:
        if profile is None:
            return None
        from cgtool.render.node_lines import short_where

        top = max((n.us or 0.0 for n in profile.nodes), default=0.0) or 1.0
        text, fill, module = {}, {}, {}
        for n in profile.nodes:
            if n.module:
                module[n.node] = ".".join(n.module.split(".")[:MODULE_DEPTH])
            f = n.lib if n.lib >= 0 else n.frame
            where = short_where(profile.frames[f].file, profile.frames[f].line) if f >= 0 else "no line"
            text[n.node] = where + (f" · {fmt_us(n.us)}" if n.us is not None else "")
            if n.us is not None:
                fill[n.node] = HEAT[min(len(HEAT) - 1, int(len(HEAT) * (n.us / top) ** 0.5))]
        return cls(text, fill, module)


MODULE_DEPTH = 4  # module clusters nest down to model.layers.3.self_attn, not deeper

HEAT = ("#fff5f0", "#fee0d2", "#fcbba1", "#fc9272", "#fb6a4a", "#ef3b2c", "#cb181d")  # light to dark red


def node_label(node: GraphNode, marks: _NodeLines | None = None) -> str:
    """What a node says in the picture: short kernel name and launch dims, copy direction and size; with
    node_lines, the line that made it and its replay GPU time."""
    lines = [node.name or node.kind]
    if node.kind == "kernel" and node.launch:
        lines.append(node.launch)
    elif node.bytes is not None and node.kind in ("memcpy", "memset", "mem_alloc"):
        lines.append(fmt_bytes(node.bytes))
    if marks is not None and node.id in marks.text:
        lines.append(marks.text[node.id])
    if node.kind == "empty":
        return ""
    return "\\n".join(_text(line) for line in lines)


def _text(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', "'")


def _draw_nodes(dot: graphviz.Digraph, graph: Graph, repeats: list[Repeat], shown: set[int],
                marks: _NodeLines | None) -> dict[int, list[int]]:
    fold_of = {n: r for r in repeats for n in r.first_block}
    by_graph: dict[int, list[int]] = {}
    for gid, ids in nodes_by_graph(graph).items():
        ids = [n for n in ids if n in shown]
        by_graph[gid] = ids
        if not ids:
            continue
        target = dot if gid == 0 else graphviz.Digraph(f"cluster_graph{gid}")
        if gid:
            target.attr(label=_body_label(graph, gid), style="dashed,rounded", color="#868e96", cg_graph=str(gid),
                        fontname="Helvetica", fontsize="10")
        for r in (r for r in repeats if r.graph == gid and r.members[0] in shown):
            sub = graphviz.Digraph(f"cluster_fold{r.members[0]}")
            sub.attr(label=f"×{r.count:,}  ({r.period} node{'s' if r.period > 1 else ''} each, "
                           f"{len(r.members):,} in all)",
                     style="rounded,filled", fillcolor="#f8f9fa", color="#1c7ed6", penwidth="1.5",
                     fontname="Helvetica-Bold", fontsize="11", fontcolor="#1864ab",
                     cg_fold_ids=encode_ids(r.members), cg_period=str(r.period))
            for n in r.first_block:
                if n in shown:
                    _node(sub, graph.nodes[n], marks)
            target.subgraph(sub)
        loose = [n for n in ids if n not in fold_of]
        if marks is not None and marks.module:
            _module_clusters(target, graph, loose, marks, f"g{gid}")
        else:
            for n in loose:
                _node(target, graph.nodes[n], marks)
        if gid:
            dot.subgraph(target)
    return by_graph


def _module_clusters(target: graphviz.Digraph, graph: Graph, ids: list[int], marks: _NodeLines, tag: str) -> None:
    """Nodes inside nested clusters by the module that made them (`layers` holds `layers.0`, which holds
    `layers.0.self_attn`); nodes of no module stay outside."""
    tree: dict[str, list[int]] = {}
    for n in ids:
        tree.setdefault(marks.module.get(n, ""), []).append(n)
    paths = sorted({".".join(p.split(".")[:k]) for p in tree if p for k in range(1, p.count(".") + 2)})
    clusters: dict[str, graphviz.Digraph] = {}
    for p in paths:
        clusters[p] = graphviz.Digraph(f"cluster_mod_{tag}_{len(clusters)}")
        clusters[p].attr(label=p, style="rounded", color="#adb5bd", fontname="Helvetica", fontsize="9",
                         fontcolor="#495057", labeljust="l", cg_module=p)
    for p, members in tree.items():
        for n in members:
            _node(clusters[p] if p else target, graph.nodes[n], marks)
    for p in sorted(paths, key=lambda q: -q.count(".")):  # innermost first, into its parent
        parent = p.rsplit(".", 1)[0] if "." in p else ""
        (clusters[parent] if parent else target).subgraph(clusters[p])


def _node(dot: graphviz.Digraph, node: GraphNode, marks: _NodeLines | None = None) -> None:
    fill, shape = PALETTE.get(node.kind, PALETTE["unknown"])
    if marks is not None:
        fill = marks.fill.get(node.id, fill)
    extra = {"width": "0.2", "fixedsize": "true", "tooltip": "empty"} if node.kind == "empty" else {}
    if node.kind in ("kernel", "memcpy", "memset", "host", "mem_alloc", "mem_free", "unknown", "batch_mem_op"):
        extra["style"] = "filled,rounded"
    if node.demangled and node.demangled != node.name:
        extra["tooltip"] = _text(node.demangled)
    if marks is not None and node.id in marks.href:
        extra["href"], extra["target"] = _text(marks.href[node.id]), "_self"
    dot.node(f"n{node.id}", graphviz.nohtml(node_label(node, marks)), fillcolor=fill, shape=shape,
             **extra, **{k: graphviz.nohtml(v) for k, v in node_attrs(node).items()})


def _draw_edges(dot: graphviz.Digraph, graph: Graph, repeats: list[Repeat], hidden: set[int], shown: set[int]) -> None:
    rep = {}  # member of a later copy -> the first-copy node drawn for it
    first, link_from = {}, {}
    for r in repeats:
        for k, m in enumerate(r.members):
            rep[m] = r.members[k % r.period]
        first.update({m: r for m in r.first_block})
        link_from.update({m: r for m in r.block(1)})
    for a, b in graph.edges:
        ra, rb = rep.get(a, a), rep.get(b, b)
        if ra not in shown or rb not in shown:
            continue
        if a in first and link_from.get(b) is first[a]:  # copy 1 -> copy 2, drawn once for all copies
            dot.edge(f"n{ra}", f"n{rb}", style="dashed", color="#1c7ed6", constraint="false", cg_link="1",
                     tailport="e", headport="e", xlabel="next copy", fontsize="8", fontcolor="#1c7ed6",
                     fontname="Helvetica")
        elif a in hidden and b in hidden:
            continue  # inside a later copy, or from one later copy to the next: implied by the fold
        elif a in hidden:  # leaves the last copy
            dot.edge(f"n{ra}", f"n{b}", cg_from=str(a))
        else:
            dot.edge(f"n{a}", f"n{b}")


def _draw_child_links(dot: graphviz.Digraph, graph: Graph, by_graph: dict[int, list[int]], shown: set[int]) -> None:
    for node in graph.nodes:
        if node.child is None or node.id not in shown or not by_graph.get(node.child):
            continue
        dot.edge(f"n{node.id}", f"n{by_graph[node.child][0]}", lhead=f"cluster_graph{node.child}", style="dotted",
                 color="#868e96", arrowhead="odot", cg_visual="1")


def _body_label(graph: Graph, gid: int) -> str:
    owner = next((n for n in graph.nodes if n.child == gid or gid in n.attrs.get("bodies", ())), None)
    if owner is None:
        return f"graph {gid}"
    if owner.kind == "conditional":
        return f"{owner.attrs.get('cond_type', 'conditional')} body (graph {gid}, of node {owner.id})"
    return f"child graph {gid} (node {owner.id})"


def _title(graph: Graph, title: str) -> str:
    """The picture's heading: counts, then a colour key of the kinds present (an HTML-like label)."""
    order = list(PALETTE)
    kinds = sorted(graph.count_by_kind(), key=lambda k: (order.index(k) if k in PALETTE else len(order), k))
    # Fixed sizes throughout: otherwise Graphviz stretches the key to the width of a long title.
    widths = [6 * len(kind_word(k)) + 12 for k in kinds]
    cells = "".join(f'<TD BGCOLOR="{PALETTE.get(k, PALETTE["unknown"])[0]}" BORDER="1" FIXEDSIZE="TRUE" WIDTH="{w}" HEIGHT="16">'
                    f'{kind_word(k)}</TD>' for k, w in zip(kinds, widths))
    title = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if len(kinds) < 2:  # one colour needs no key
        return f"<{title}>"
    key = (f'<TABLE BORDER="0" CELLSPACING="2" CELLPADDING="0" FIXEDSIZE="TRUE" WIDTH="{sum(widths) + 2 * len(kinds) + 2}"'
           f' HEIGHT="20"><TR>{cells}</TR></TABLE>')
    return f'<<TABLE BORDER="0"><TR><TD>{title}</TD></TR><TR><TD ALIGN="CENTER"><FONT POINT-SIZE="9">{key}</FONT></TD></TR></TABLE>>'


def _need_graphviz() -> None:
    global graphviz
    if graphviz is None:
        graphviz = graphviz_package()
