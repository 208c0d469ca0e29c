"""The graph model every other part of cgtool consumes: nodes, edges, child graphs; lossless JSON.

A captured graph and its child graphs are stored flat: every node carries the id of the graph
it belongs to (0 is the top-level graph) and a child-graph node names the graph it embeds.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

# Node kinds, named after CUgraphNodeType. Anything the reader does not know becomes "unknown"
# with the raw type number kept in `attrs["type_id"]`.
KINDS = (
    "kernel",
    "memcpy",
    "memset",
    "host",
    "graph",
    "empty",
    "event_wait",
    "event_record",
    "sema_signal",
    "sema_wait",
    "mem_alloc",
    "mem_free",
    "batch_mem_op",
    "conditional",
    "unknown",
)

# CUgraphNodeType value -> kind (values 14+ exist only in CUDA 13; unknown ones stay "unknown").
KIND_BY_TYPE_ID = {
    0: "kernel",
    1: "memcpy",
    2: "memset",
    3: "host",
    4: "graph",
    5: "empty",
    6: "event_wait",
    7: "event_record",
    8: "sema_signal",
    9: "sema_wait",
    10: "mem_alloc",
    11: "mem_free",
    12: "batch_mem_op",
    13: "conditional",
}

Dim3 = tuple[int, int, int]


@dataclass(frozen=True)
class GraphNode:
    id: int  # index in Graph.nodes
    kind: str
    graph: int = 0  # which graph the node belongs to: 0 = top level, else a child graph id
    name: str = ""  # short readable label: kernel short name, "memcpy HtoD", ...
    mangled: str | None = None  # kernel symbol as the driver reports it
    demangled: str | None = None  # kernel symbol demangled (same as mangled if not mangled)
    grid: Dim3 | None = None
    block: Dim3 | None = None
    shared_mem: int | None = None  # dynamic shared memory, bytes
    copy_kind: str | None = None  # memcpy: "HtoD", "DtoH", "DtoD", "HtoH", "default"
    bytes: int | None = None  # memcpy / memset / mem_alloc size
    child: int | None = None  # kind "graph" (or a conditional body): the embedded graph's id
    attrs: dict[str, Any] = field(default_factory=dict, hash=False, compare=True)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or (f.name == "attrs" and not value):
                continue
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GraphNode:
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known}
        for dim in ("grid", "block"):
            if kwargs.get(dim) is not None:
                kwargs[dim] = tuple(kwargs[dim])
        return cls(**kwargs)

    @property
    def launch(self) -> str:
        """`<<<grid, block, smem>>>` for kernels, else ""."""
        if self.kind != "kernel" or self.grid is None or self.block is None:
            return ""
        return f"<<<{_dim(self.grid)},{_dim(self.block)},{self.shared_mem or 0}>>>"


def _dim(d: Dim3) -> str:
    x, y, z = d
    if y == 1 and z == 1:
        return str(x)
    return "{" + f"{x},{y},{z}" + "}"


@dataclass(frozen=True)
class Graph:
    nodes: tuple[GraphNode, ...]
    edges: tuple[tuple[int, int], ...]  # (from, to): `to` depends on `from`; both are node ids
    source: str = "cuda"  # "cuda" (read from the driver), "driver-dot", "cgtool-dot", "json"

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "nodes": [n.to_json() for n in self.nodes],
            "edges": [list(e) for e in self.edges],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Graph:
        nodes = tuple(GraphNode.from_json(n) for n in data["nodes"])
        edges = tuple((int(a), int(b)) for a, b in data["edges"])
        return cls(nodes=nodes, edges=edges, source=data.get("source", "json"))

    def count_by_kind(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for n in self.nodes:
            counts[n.kind] = counts.get(n.kind, 0) + 1
        return counts

    @property
    def kernels(self) -> list[GraphNode]:
        return [n for n in self.nodes if n.kind == "kernel"]
