"""cgtool's own DOT (graph.dot): the machine-readable `cg_*` attributes it carries, and reading it back.

Every drawn node carries its GraphNode fields as `cg_*` attributes. A folded run is one cluster with
`cg_fold_ids` (the member ids, block after block) and `cg_period`; its first block is drawn, edges inside
a block are drawn once, the edges from one copy to the next once with `cg_link`, and an edge that
leaves the last copy names its real tail in `cg_from`. Edges drawn only for the picture have
`cg_visual`. So reading a folded file gives back every node and edge (repeats share the first block's attrs).
"""

from __future__ import annotations

import json
from typing import Any

from cgtool.errors import CgtoolError, ExitCode
from cgtool.graph.dot_records import DotFile
from cgtool.graph.model import KINDS, Graph, GraphNode
from cgtool.graph.names import demangle

FORMAT = "cgtool-dot/1"
MAX_NODES = 2_000_000  # a cg_fold_ids range past this is a broken file, not a graph (it would only eat memory)
_FIELDS = ("kind", "graph", "name", "mangled", "copy_kind", "bytes", "shared_mem", "child")
_INTS = {"graph", "bytes", "shared_mem", "child"}


def encode(value: str) -> str:
    """Attribute text safe to quote in DOT both ways: `%`, `\\` and `"` are percent-escaped."""
    return value.replace("%", "%25").replace("\\", "%5C").replace('"', "%22")


def decode(value: str) -> str:
    return value.replace("%22", '"').replace("%5C", "\\").replace("%25", "%")


def node_attrs(node: GraphNode) -> dict[str, str]:
    """The `cg_*` attributes that let read_cgtool_dot rebuild `node`."""
    out = {"cg_id": str(node.id)}
    for f in _FIELDS:
        value = getattr(node, f)
        if value is not None:
            out[f"cg_{f}"] = encode(str(value))
    for f in ("grid", "block"):
        dims = getattr(node, f)
        if dims is not None:
            out[f"cg_{f}"] = ",".join(map(str, dims))
    if node.attrs:
        out["cg_attrs"] = encode(json.dumps(node.attrs, separators=(",", ":"), sort_keys=True))
    return out


def encode_ids(ids: tuple[int, ...] | list[int]) -> str:
    """`0-2999` or `4-6,9,12-20`: node ids as ranges."""
    parts: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(parts)


def decode_ids(text: str, limit: int = MAX_NODES) -> list[int]:
    """The ids that encode_ids wrote; a ValueError for text that is not ranges of ids, or more than `limit`."""
    out: list[int] = []
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        first, last = _whole(lo, "cg_fold_ids"), _whole(hi or lo, "cg_fold_ids")
        if last - first + 1 > limit - len(out):
            raise ValueError(f"cg_fold_ids names more than {limit:,} nodes")
        out.extend(range(first, last + 1))
    return out


def _whole(text: str, name: str) -> int:
    digits = text.strip()
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 18):
        raise ValueError(f'{name} holds "{text[:40]}", not a whole number')
    return int(digits)


def is_cgtool_dot(dot: DotFile) -> bool:
    return dot.attrs.get("cg_format", "").startswith("cgtool-dot/")


def read_cgtool_dot(dot: DotFile, path: str = "<cgtool dot>") -> Graph:
    """The Graph that render.dot.graph_to_dot drew into `dot` (a parsed cgtool graph.dot)."""
    if dot.attrs.get("cg_truncated"):
        raise CgtoolError(
            f"{path} was drawn with --max-nodes and leaves {dot.attrs['cg_truncated']} nodes out: "
            "read the full graph from report.json or the driver's DOT instead", ExitCode.USAGE)
    try:
        return _read(dot)
    except (KeyError, ValueError, IndexError, TypeError, RecursionError) as exc:
        raise CgtoolError(f"{path}: a cgtool DOT file with broken cg_* attributes: {_why(exc)}", ExitCode.USAGE) from None


def _why(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"node {exc.args[0]} is named but never drawn" if exc.args and isinstance(exc.args[0], int) else \
            f"attribute {exc.args[0] if exc.args else ''} is missing"
    if isinstance(exc, RecursionError):
        return "cg_attrs is nested too deeply"
    if isinstance(exc, ValueError):
        return str(exc)
    return "an attribute has the wrong form"


def _read(dot: DotFile) -> Graph:
    nodes: dict[int, GraphNode] = {}
    rep_id: dict[str, int] = {}  # DOT node name -> node id
    for dn in dot.nodes.values():
        if "cg_kind" in dn.attrs:
            node = _node(dn.attrs)
            nodes[node.id] = node
            rep_id[dn.name] = node.id
    folds = {}  # cluster name -> (members, period, offset of each drawn member)
    for name, sg in dot.subgraphs.items():
        if "cg_fold_ids" in sg.attrs:
            members, period = decode_ids(sg.attrs["cg_fold_ids"]), _whole(sg.attrs["cg_period"], "cg_period")
            if not 1 <= period <= len(members):
                raise ValueError(f"cg_period {period} does not divide a fold of {len(members)} nodes")
            folds[name] = (members, period, {m: k for k, m in enumerate(members[:period])})
            for k, member in enumerate(members[period:], period):
                rep = nodes[members[k % period]]
                nodes[member] = GraphNode(**{**rep.__dict__, "id": member, "attrs": dict(rep.attrs)})
    fold_of = {m: f for f in folds.values() for m in f[2]}
    edges: set[tuple[int, int]] = set()
    for e in dot.edges:
        if e.attrs.get("cg_visual") or e.tail not in rep_id or e.head not in rep_id:
            continue
        a, b = rep_id[e.tail], rep_id[e.head]
        fold = fold_of.get(a)
        if fold is not None and fold is fold_of.get(b) and "cg_from" not in e.attrs:
            members, period, offset = fold
            step = period if e.attrs.get("cg_link") else 0
            for k in range(len(members) // period - (1 if step else 0)):
                edges.add((members[k * period + offset[a]], members[k * period + step + offset[b]]))
            continue
        edges.add((_whole(e.attrs["cg_from"], "cg_from") if "cg_from" in e.attrs else a,
                   _whole(e.attrs["cg_to"], "cg_to") if "cg_to" in e.attrs else b))
    if sorted(nodes) != list(range(len(nodes))):
        raise ValueError("node ids are not 0..n-1")
    if any(not (a in nodes and b in nodes) for a, b in edges):
        raise ValueError("an edge names a node that does not exist")
    return Graph(tuple(nodes[i] for i in range(len(nodes))), tuple(sorted(edges)), source="cgtool-dot")


def _node(attrs: dict[str, str]) -> GraphNode:
    kwargs: dict[str, Any] = {"id": _whole(attrs.get("cg_id", ""), "cg_id")}
    for f in _FIELDS:
        raw = attrs.get(f"cg_{f}")
        if raw is not None:
            kwargs[f] = _whole(raw, f"cg_{f}") if f in _INTS else decode(raw)
    for f in ("grid", "block"):
        if f"cg_{f}" in attrs:
            dims = attrs[f"cg_{f}"].split(",")
            if len(dims) != 3:
                raise ValueError(f"cg_{f} must be three whole numbers x,y,z")
            x, y, z = (_whole(v, f"cg_{f}") for v in dims)
            kwargs[f] = (x, y, z)
    if kwargs.get("mangled"):
        kwargs["demangled"] = demangle(kwargs["mangled"])
    if "cg_attrs" in attrs:
        try:
            kwargs["attrs"] = json.loads(decode(attrs["cg_attrs"]))
        except json.JSONDecodeError as exc:
            raise ValueError(f"cg_attrs is not valid JSON ({exc.msg})") from None
        if not isinstance(kwargs["attrs"], dict):
            raise ValueError("cg_attrs must be a JSON object")
    if kwargs["kind"] not in KINDS:  # from a newer cgtool, or edited: kept, drawn as "unknown"
        kwargs["attrs"] = {**kwargs.get("attrs", {}), "kind": kwargs["kind"]}
        kwargs["kind"] = "unknown"
    return GraphNode(**kwargs)
