"""The graph model every other part of cgtool consumes: nodes, edges, child graphs; lossless JSON.

A captured graph and its child graphs are stored flat: every node carries the id of the graph
it belongs to (0 is the top-level graph) and a child-graph node names the graph it embeds.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
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
        for name in _NODE_FIELDS:  # the fields, in order (a 3,000-node report reads and writes them all)
            value = getattr(self, name)
            if value is None or (name == "attrs" and not value):
                continue
            out[name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any], where: str = "node") -> GraphNode:
        """The node in `data`; a ValueError naming `where` and the field for anything malformed. A kind this
        cgtool does not know becomes "unknown", the original kept in attrs["kind"]."""
        kwargs = _plain_fields(data)
        if kwargs is None:
            kwargs = _checked_fields(data, where)
        if kwargs["kind"] not in KINDS:
            kwargs["attrs"] = {**kwargs.get("attrs", {}), "kind": kwargs["kind"]}
            kwargs["kind"] = "unknown"
        if cls is not GraphNode:  # a subclass may check or add fields in its own __init__
            return cls(**kwargs)
        # the fields set as dataclass's frozen __init__ sets them (one object.__setattr__ each, 3 of a node's 5 µs),
        # all at once, as copy and pickle make a node: the fields read above are all there is to check
        state = {**_NODE_DEFAULTS, **kwargs}
        if "attrs" not in kwargs:
            state["attrs"] = {}
        node = object.__new__(cls)
        object.__setattr__(node, "__dict__", state)
        return node

    @property
    def launch(self) -> str:
        """`<<<grid, block, smem>>>` for kernels, else ""."""
        if self.kind != "kernel" or self.grid is None or self.block is None:
            return ""
        return f"<<<{_dim(self.grid)},{_dim(self.block)},{self.shared_mem or 0}>>>"


def _plain_fields(data: Any) -> dict[str, Any] | None:
    """A node's fields when every one is of JSON's own type (a node json.load read): one pass over the keys it
    has, a third of the time of _checked_fields on a 3,000-node report. None for anything else: _checked_fields
    then says what is wrong."""
    if type(data) is not dict or "id" not in data or "kind" not in data:
        return None
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        expected = _NODE_FIELDS.get(name)
        if expected is None:
            continue
        if value is None:
            if name == "id" or name == "kind":
                return None
            continue
        if expected == "dim3":
            if not (type(value) is list and len(value) == 3 and type(value[0]) is int and type(value[1]) is int
                    and type(value[2]) is int):
                return None
            value = tuple(value)
        elif type(value) is not _PLAIN_TYPES[expected]:
            return None
        kwargs[name] = value
    return kwargs


def _checked_fields(data: Any, where: str) -> dict[str, Any]:
    """A node's fields, each checked: a ValueError naming `where` and the first field that is wrong."""
    if not isinstance(data, dict):
        raise ValueError(f"{where} is {json_type(data)}, not an object")
    for name in ("id", "kind"):
        if name not in data:
            raise ValueError(f"{where} has no `{name}`")
    kwargs: dict[str, Any] = {}
    for name, expected in _NODE_FIELDS.items():
        if name not in data:
            continue
        value = data[name]
        if value is None and name not in ("id", "kind"):
            continue
        if expected == "dim3":
            ok = isinstance(value, list) and len(value) == 3 and all(_is_int(v) for v in value)
            value = tuple(value) if ok else value
        elif expected == "int":
            ok = _is_int(value)
        else:
            ok = isinstance(value, _JSON_TYPES[expected])
        if not ok:
            raise ValueError(f"{where}.{name} is {json_type(value)}, expected {_EXPECTED[expected]}")
        kwargs[name] = value
    return kwargs


_NODE_FIELDS = {"id": "int", "kind": "str", "graph": "int", "name": "str", "mangled": "str", "demangled": "str",
                "grid": "dim3", "block": "dim3", "shared_mem": "int", "copy_kind": "str", "bytes": "int",
                "child": "int", "attrs": "dict"}
assert tuple(_NODE_FIELDS) == tuple(f.name for f in fields(GraphNode)), "_NODE_FIELDS must list GraphNode's fields"
_NODE_DEFAULTS = {f.name: f.default for f in fields(GraphNode) if f.default is not MISSING}
assert set(_NODE_FIELDS) - set(_NODE_DEFAULTS) == {"id", "kind", "attrs"}, "GraphNode.from_json makes attrs, and only it"
_JSON_TYPES: dict[str, type | tuple[type, ...]] = {"str": str, "dict": dict}
_PLAIN_TYPES = {"int": int, "str": str, "dict": dict}  # each field's JSON type exactly (bool is not an int here)
_EXPECTED = {"int": "a whole number", "str": "text", "dim3": "three whole numbers [x, y, z]", "dict": "an object"}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def json_type(value: Any) -> str:
    """How a JSON value's type reads in an error message: "text", "a list", "null", ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


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
    def from_json(cls, data: dict[str, Any], where: str = "graph") -> Graph:
        """The graph in `data`, checked: nodes and edges are lists, node ids are 0..n-1 in order, and edges
        join existing nodes. A ValueError says which field is wrong (`graph.nodes[3].grid is text, ...`)."""
        if not isinstance(data, dict):
            raise ValueError(f"{where} is {json_type(data)}, not an object")
        for name in ("nodes", "edges"):
            if not isinstance(data.get(name), list):
                found = "missing" if name not in data else json_type(data[name])
                raise ValueError(f"{where}.{name} is {found}, expected a list")
        nodes = tuple(GraphNode.from_json(n, f"{where}.nodes[{i}]") for i, n in enumerate(data["nodes"]))
        for i, node in enumerate(nodes):
            if node.id != i:
                raise ValueError(f"{where}.nodes[{i}] has id {node.id}: node ids must be 0..n-1 in order")
        edges = []
        count = len(nodes)
        for i, e in enumerate(data["edges"]):
            if type(e) is list and len(e) == 2 and type(e[0]) is int and type(e[1]) is int and 0 <= e[0] < count \
                    and 0 <= e[1] < count:  # JSON's own pair of ids, both in range: the checks below, in one test
                edges.append((e[0], e[1]))
                continue
            if not (isinstance(e, list) and len(e) == 2 and all(_is_int(v) for v in e)):
                raise ValueError(f"{where}.edges[{i}] is {json_type(e)}, expected a pair of node ids [from, to]")
            if not all(0 <= v < len(nodes) for v in e):
                raise ValueError(f"{where}.edges[{i}] {e} names a node that does not exist (the graph has {len(nodes)})")
            edges.append((e[0], e[1]))
        source = data.get("source", "json")
        if not isinstance(source, str):
            raise ValueError(f"{where}.source is {json_type(source)}, expected text")
        return cls(nodes=nodes, edges=tuple(edges), source=source)

    def count_by_kind(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for n in self.nodes:
            counts[n.kind] = counts.get(n.kind, 0) + 1
        return counts

    @property
    def kernels(self) -> list[GraphNode]:
        return [n for n in self.nodes if n.kind == "kernel"]
