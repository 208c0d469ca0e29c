"""Compare two graphs: nodes added and removed by kind and by kernel, edge, depth and width changes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cgtool.graph.model import Graph
from cgtool.graph.summary import GraphSummary, summarize


@dataclass(frozen=True)
class DiffRow:
    group: str  # "total", "kind" or "kernel"
    name: str
    before: int
    after: int

    @property
    def delta(self) -> int:
        return self.after - self.before

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group, "name": self.name, "before": self.before, "after": self.after,
                "delta": self.delta}


@dataclass(frozen=True)
class GraphDiff:
    rows: tuple[DiffRow, ...]  # totals (nodes, edges, depth, width, kernels), then kinds, then kernels

    def total(self, name: str) -> DiffRow:
        return next(r for r in self.rows if r.group == "total" and r.name == name)

    @property
    def growth_pct(self) -> float:
        """Node count change in percent of the first graph's (0 when both are empty)."""
        nodes = self.total("nodes")
        if nodes.before == 0:
            return 0.0 if nodes.after == 0 else float("inf")
        return 100.0 * nodes.delta / nodes.before

    @property
    def changed(self) -> tuple[DiffRow, ...]:
        return tuple(r for r in self.rows if r.delta or r.group == "total")

    def to_json(self) -> dict[str, Any]:
        return {"growth_pct": self.growth_pct, "rows": [r.to_json() for r in self.rows]}


def diff_summaries(before: GraphSummary, after: GraphSummary) -> GraphDiff:
    rows = [
        DiffRow("total", "nodes", before.nodes, after.nodes),
        DiffRow("total", "edges", before.edges, after.edges),
        DiffRow("total", "depth", before.depth, after.depth),
        DiffRow("total", "width", before.width, after.width),
        DiffRow("total", "kernels", before.counts["by_kind"].get("kernel", 0), after.counts["by_kind"].get("kernel", 0)),
    ]
    rows += _rows("kind", before.counts["by_kind"], after.counts["by_kind"])
    rows += _rows("kernel", before.counts["kernels_by_name"], after.counts["kernels_by_name"])
    return GraphDiff(tuple(rows))


def diff_graphs(before: Graph, after: Graph) -> GraphDiff:
    return diff_summaries(summarize(before), summarize(after))


def _rows(group: str, a: dict[str, int], b: dict[str, int]) -> list[DiffRow]:
    rows = [DiffRow(group, name, a.get(name, 0), b.get(name, 0)) for name in {**a, **b}]
    return sorted(rows, key=lambda r: (-abs(r.delta), -r.after, r.name))
