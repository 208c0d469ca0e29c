"""A captured graph at a glance: kinds, kernels by name, copies by direction, shape, repeated blocks."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from cgtool.graph.folding import Repeat, find_repeats
from cgtool.graph.model import Graph
from cgtool.graph.summary_counts import graph_counts
from cgtool.graph.topology import Adjacency, levels, topo_order


@dataclass(frozen=True)
class KernelGroup:
    name: str  # short readable name
    count: int
    launches: tuple[tuple[str, int], ...]  # ("<<<32,128,0>>>", how many), most frequent first
    demangled: str  # one full symbol with this short name

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "count": self.count, "launches": dict(self.launches), "demangled": self.demangled}


@dataclass(frozen=True)
class CopyGroup:
    kind: str  # "memcpy" or "memset"
    direction: str  # "HtoD", "DtoH", "DtoD", ...; "" for memset
    count: int
    bytes: int | None  # total; None when the dump did not say (some DOT flags leave sizes out)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "direction": self.direction, "count": self.count, "bytes": self.bytes}


@dataclass(frozen=True)
class RepeatGroup:
    graph: int
    count: int  # copies in a row
    block: tuple[str, ...]  # node names of one copy, in order
    kinds: tuple[str, ...]  # their kinds
    first: int  # node id where the run starts

    @property
    def nodes(self) -> int:
        return self.count * len(self.block)

    def to_json(self) -> dict[str, Any]:
        return {"graph": self.graph, "count": self.count, "period": len(self.block), "nodes": self.nodes,
                "block": list(self.block), "kinds": list(self.kinds), "first_node": self.first}


@dataclass(frozen=True)
class GraphSummary:
    source: str
    counts: dict[str, Any]  # graph_counts(): nodes, edges, by_kind, kernels_by_name, graphs
    kernels: tuple[KernelGroup, ...]
    copies: tuple[CopyGroup, ...]
    depth: int  # nodes on the longest dependency chain of the top-level graph
    width: int  # most top-level nodes on one dependency level (parallel branches)
    roots: int  # top-level nodes with no dependency
    leaves: int  # top-level nodes nothing depends on
    repeats: tuple[RepeatGroup, ...]

    @property
    def nodes(self) -> int:
        return int(self.counts["nodes"])

    @property
    def edges(self) -> int:
        return int(self.counts["edges"])

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            **{k: v for k, v in self.counts.items() if k != "kernels_by_name"},
            "depth": self.depth,
            "width": self.width,
            "roots": self.roots,
            "leaves": self.leaves,
            "kernels": [k.to_json() for k in self.kernels],
            "copies": [c.to_json() for c in self.copies],
            "repeats": [r.to_json() for r in self.repeats],
        }


def summarize(graph: Graph, repeats: list[Repeat] | None = None) -> GraphSummary:
    """Everything `cgtool dot FILE` prints; pass `repeats` if find_repeats already ran."""
    adj = Adjacency.of(graph)
    top = [n.id for n in graph.nodes if n.graph == 0]
    order = topo_order(graph, adj, top)
    level = levels(order, adj)
    per_level = Counter(level.values())
    if repeats is None:
        repeats = find_repeats(graph, adj)
    return GraphSummary(
        source=graph.source,
        counts=graph_counts(graph),
        kernels=_kernels(graph),
        copies=_copies(graph),
        depth=max(level.values(), default=0),
        width=max(per_level.values(), default=0),
        roots=sum(1 for n in top if not adj.pred[n]),
        leaves=sum(1 for n in top if not adj.succ[n]),
        repeats=tuple(
            RepeatGroup(r.graph, r.count, tuple(graph.nodes[n].name for n in r.first_block),
                        tuple(graph.nodes[n].kind for n in r.first_block), r.members[0])
            for r in repeats
        ),
    )


def _kernels(graph: Graph) -> tuple[KernelGroup, ...]:
    launches: dict[str, Counter[str]] = {}
    symbol: dict[str, str] = {}
    for n in graph.kernels:
        launches.setdefault(n.name, Counter())[n.launch or "unknown"] += 1
        symbol.setdefault(n.name, n.demangled or n.mangled or n.name)
    groups = [
        KernelGroup(name, sum(c.values()), tuple(c.most_common()), symbol[name]) for name, c in launches.items()
    ]
    return tuple(sorted(groups, key=lambda g: (-g.count, g.name)))


def _copies(graph: Graph) -> tuple[CopyGroup, ...]:
    count: Counter[tuple[str, str]] = Counter()
    total: dict[tuple[str, str], int | None] = {}
    for n in graph.nodes:
        if n.kind not in ("memcpy", "memset"):
            continue
        key = (n.kind, (n.copy_kind or "?") if n.kind == "memcpy" else "")
        count[key] += 1
        known = total.get(key, 0)
        total[key] = None if known is None or n.bytes is None else known + n.bytes
    return tuple(CopyGroup(k, d, c, total[(k, d)]) for (k, d), c in sorted(count.items()))
