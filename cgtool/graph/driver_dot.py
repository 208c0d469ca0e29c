"""Read the CUDA driver's DOT dump (cudaGraphDebugDotPrint, torch's CUDAGraph.debug_dump) into a Graph.

Works with any flags: verbose dumps have record labels (`{KERNEL | {ID | 0 (topoId: 3) | name\\<\\<\\<…`),
flags=0 dumps have plain labels ("1\\nMEMCPY\\n(HtoD,4096)"). Each `subgraph cluster_N` is one graph;
the one no node embeds is the top level (graph 0), the others are child or conditional bodies.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cgtool.errors import CgtoolError, ExitCode
from cgtool.graph.dot_records import DotFile, DotNode
from cgtool.graph.dotfile import parse_dot
from cgtool.graph.model import Dim3, Graph, GraphNode
from cgtool.graph.names import demangle, short_name
from cgtool.graph.record_label import parse_record, record_fields, unescape

KIND_BY_DRIVER_TYPE = {
    "KERNEL": "kernel",
    "MEMCPY": "memcpy",
    "MEMSET": "memset",
    "HOST": "host",
    "EMPTY": "empty",
    "EVENT_RECORD": "event_record",
    "EVENT_WAIT": "event_wait",
    "EXT_SEMAS_SIGNAL": "sema_signal",
    "EXT_SEMAS_WAIT": "sema_wait",
    "MEM_ALLOC": "mem_alloc",
    "MEM_FREE": "mem_free",
    "BATCH_MEM_OP": "batch_mem_op",
    "CONDITIONAL": "conditional",
}
_GRAPH_REF = re.compile(r"^graph_(\d+)$")
_ID_FIELD = re.compile(r"^(\d+)(?: \(topoId: (\d+)\))?$")
_LAUNCH = re.compile(r"^(.*?)<<<(\{[\d, ]*\}|\d+),(\{[\d, ]*\}|\d+),(\d+)>>>$", re.S)
_PAIR = re.compile(r"^\((-?\w+),(\d+)\)$")  # flags=0 memcpy "(HtoD,4096)" / memset "(0,4096)"
_MEMTYPE = {"HOST": "H", "DEVICE": "D", "ARRAY": "D", "UNIFIED": "D"}
# Kernel records are most of a big dump; read them with one expression instead of the record parser.
_KERNEL_RECORD = re.compile(r"^\{\s*KERNEL\s*\|\s*\{\s*ID\s*\|([^|}]*)\|([^|}\\]*(?:\\.[^|}\\]*)*)\}")


def read_driver_dot(source: str | Path) -> Graph:
    """The graph in a driver DOT dump: a Path is read from disk, a str is the DOT text itself."""
    if isinstance(source, Path):
        from cgtool.files.inputs import GRAPH, read_input

        text = read_input(str(source), GRAPH).decode("utf-8", errors="replace")
        return graph_from_driver_dot(parse_dot(text, str(source)))
    return graph_from_driver_dot(parse_dot(source, "<driver dot>"))


def graph_from_driver_dot(dot: DotFile) -> Graph:
    """Interpret a parsed driver dump: clusters become graph ids, labels become typed nodes."""
    raw = [(dn, _interpret_or_unknown(dn)) for dn in dot.nodes.values()]
    referenced = {ref for _, fields in raw for ref in fields.pop("_refs", ())}
    clusters = [name for name in dot.subgraphs if name.startswith("cluster")]
    label_of = {name: dot.subgraphs[name].attrs.get("label", name) for name in clusters}
    top = next((c for c in clusters if label_of[c] not in referenced), clusters[0] if clusters else None)
    graph_ids: dict[str | None, int] = {top: 0, None: 0}
    for c in clusters:
        graph_ids.setdefault(c, len(graph_ids) - 1)
    ids_by_label = {label_of[c]: graph_ids[c] for c in clusters}

    nodes: list[GraphNode] = []
    index: dict[str, int] = {}
    for dn, fields in raw:
        refs = fields.pop("_bodies", [])
        bodies = [ids_by_label[r] for r in refs if r in ids_by_label]
        if bodies:
            fields["child"] = bodies[0]
            if len(bodies) > 1:
                fields.setdefault("attrs", {})["bodies"] = bodies
        index[dn.name] = len(nodes)
        nodes.append(GraphNode(id=len(nodes), graph=graph_ids.get(dn.subgraph, 0), **fields))
    edges = tuple((index[e.tail], index[e.head]) for e in dot.edges)
    if not nodes:
        raise CgtoolError("the DOT file has no nodes: nothing to read as a CUDA graph", ExitCode.USAGE)
    return Graph(nodes=tuple(nodes), edges=edges, source="driver-dot")


def _interpret_or_unknown(dn: DotNode) -> dict[str, Any]:
    """_interpret, but a label it cannot make sense of (numbers past Python's int limit, records nested
    hundreds deep) is an unknown node, as any label the reader does not know is."""
    try:
        return _interpret(dn)
    except (ValueError, IndexError, KeyError, TypeError, RecursionError):
        return _unknown("", {"unreadable_label": True})


def _interpret(dn: DotNode) -> dict[str, Any]:
    label = dn.attrs.get("label", "")
    shape = dn.attrs.get("shape", "")
    if shape == "record" or label.lstrip().startswith("{"):
        m = _KERNEL_RECORD.match(label)
        if m:
            return _kernel(unescape(m.group(2)).strip(), _topo(m.group(1).strip()))
        return _from_record(label)
    return _from_plain(label, shape)


def _from_record(label: str) -> dict[str, Any]:
    tree = parse_record(label)
    head = tree[0] if tree and isinstance(tree[0], str) else ""
    fields = record_fields(tree[1:] if head else tree)
    attrs = _topo(fields.get("ID", ""))
    kind = KIND_BY_DRIVER_TYPE.get(head.strip())
    if kind is None:
        return _unknown(head.strip(), attrs)
    if kind == "kernel":
        name = next((v for v in fields.values() if "<<<" in v), "")
        return _kernel(name, attrs)
    out: dict[str, Any] = {"kind": kind, "name": kind.replace("_", " ")}
    if kind == "memcpy":
        _memcpy_fields(fields, out)
    elif kind == "memset":
        width, esize, height = (_int(fields.get(k)) for k in ("width", "elementSize", "height"))
        if width is not None:
            out["bytes"] = width * (esize or 1) * (height or 1)
        if _int(fields.get("value")) is not None:
            attrs["value"] = _int(fields.get("value"))
    elif kind == "mem_alloc":
        out["bytes"] = _int(fields.get("bytesize"))
    elif kind == "conditional":
        cond = fields.get("Conditional Type", "").strip()
        if cond:
            attrs["cond_type"] = cond
            out["name"] = f"conditional {cond}"
        out["_bodies"] = [v.strip() for v in fields.values() if _GRAPH_REF.match(v.strip())]
        out["_refs"] = out["_bodies"]
    if attrs:
        out["attrs"] = attrs
    return {k: v for k, v in out.items() if v is not None}


def _memcpy_fields(fields: dict[str, str], out: dict[str, Any]) -> None:
    kind = fields.get("kind", "")  # runtime form: "HtoD (HOST PINNED to DEVICE)"
    if kind:
        out["copy_kind"] = kind.split()[0]
    else:  # driver form: src.MemoryType "HOST (HOST PINNED)", dst.MemoryType "DEVICE (DEVICE)"
        src = _MEMTYPE.get(fields.get("src.MemoryType", "").split(" ")[0])
        dst = _MEMTYPE.get(fields.get("dst.MemoryType", "").split(" ")[0])
        if src and dst:
            out["copy_kind"] = f"{src}to{dst}"
    width = _int(fields.get("Extent.Width", fields.get("Extent.WidthInBytes")))
    if width is not None:
        height, depth = _int(fields.get("Extent.Height")), _int(fields.get("Extent.Depth"))
        out["bytes"] = width * max(height or 1, 1) * max(depth or 1, 1)
    if "copy_kind" in out:
        out["name"] = f"memcpy {out['copy_kind']}"


def _from_plain(label: str, shape: str) -> dict[str, Any]:
    """flags=0 and rectangle labels: "ID[ (topoId: N)]\\nTYPE-or-name\\n[details]"."""
    lines = [ln.strip() for ln in label.replace("\\n", "\n").split("\n") if ln.strip()]
    attrs = _topo(lines[0]) if lines else {}
    second = lines[1] if len(lines) > 1 else ""
    rest = lines[2:]
    kind = KIND_BY_DRIVER_TYPE.get(second)
    ref = _GRAPH_REF.match(second)
    if ref:
        return {"kind": "graph", "name": "child graph", "_bodies": [second], "_refs": [second], "attrs": attrs}
    if kind is None:
        if second and (shape == "octagon" or "<<<" in second):
            return _kernel(second, attrs)
        return _unknown(second, attrs)
    out: dict[str, Any] = {"kind": kind, "name": kind.replace("_", " ")}
    pair = _PAIR.match(rest[0]) if rest else None
    if pair and kind == "memcpy":
        out["copy_kind"], out["bytes"] = pair.group(1), int(pair.group(2))
        out["name"] = f"memcpy {pair.group(1)}"
    elif pair and kind == "memset":
        attrs["value"], out["bytes"] = _int(pair.group(1)), int(pair.group(2))
    for line in rest:  # verbose rectangle labels: "event: 0x...", "fn: 0x..."
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("event", "fn"):
            attrs[key.strip()] = value.strip()
    if attrs:
        out["attrs"] = attrs
    return out


def _kernel(text: str, attrs: dict[str, Any]) -> dict[str, Any]:
    m = _LAUNCH.match(text)
    symbol = (m.group(1) if m else text).strip() or "<unnamed kernel>"
    out: dict[str, Any] = {
        "kind": "kernel",
        "name": short_name(symbol),
        "mangled": symbol,
        "demangled": demangle(symbol),
    }
    if m:
        out["grid"], out["block"], out["shared_mem"] = _dim3(m.group(2)), _dim3(m.group(3)), int(m.group(4))
    if attrs:
        out["attrs"] = attrs
    return out


def _unknown(type_name: str, attrs: dict[str, Any]) -> dict[str, Any]:
    if type_name:
        attrs["driver_type"] = type_name
    return {"kind": "unknown", "name": type_name.lower() or "unknown", "attrs": attrs}


def _topo(id_field: str) -> dict[str, Any]:
    m = _ID_FIELD.match(id_field.strip())
    return {"topo_id": int(m.group(2))} if m and m.group(2) else {}


def _dim3(text: str) -> Dim3:
    parts = [int(p) for p in text.strip("{}").split(",") if p.strip()]
    parts = (parts + [1, 1, 1])[:3]
    return (parts[0], parts[1], parts[2])


def _int(text: str | None) -> int | None:
    try:
        return int(str(text).strip(), 0)
    except (TypeError, ValueError):
        return None
