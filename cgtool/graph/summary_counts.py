"""Headline counts of a graph (nodes by kind, edges, kernels by short name) for reports and tables."""

from __future__ import annotations

from collections import Counter
from typing import Any

from cgtool.graph.model import Graph


def graph_counts(graph: Graph) -> dict[str, Any]:
    kernels = Counter(n.name for n in graph.nodes if n.kind == "kernel")
    return {
        "nodes": len(graph.nodes),
        "edges": len(graph.edges),
        "by_kind": dict(sorted(graph.count_by_kind().items(), key=lambda kv: (-kv[1], kv[0]))),
        "kernels_by_name": dict(kernels.most_common()),
        "graphs": len({n.graph for n in graph.nodes}) if graph.nodes else 0,
    }
