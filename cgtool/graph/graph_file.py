"""Read a graph from whatever file the user has: report.json, cgtool's graph.dot, or a driver DOT dump."""

from __future__ import annotations

import codecs
import os

from cgtool.errors import CgtoolError, ExitCode
from cgtool.files.inputs import GRAPH, parse_json, read_input
from cgtool.graph.cgtool_dot import is_cgtool_dot, read_cgtool_dot
from cgtool.graph.dotfile import parse_dot
from cgtool.graph.driver_dot import graph_from_driver_dot
from cgtool.graph.model import Graph
from cgtool.graph.topology import find_cycle


def read_graph_file(path: str | os.PathLike[str]) -> Graph:
    """The Graph in `path`, sniffed from its content: JSON (report.json or a bare graph), cgtool DOT
    (graph attribute cg_format) or driver DOT. Anything unreadable is a CgtoolError(ExitCode.USAGE), and so is
    a graph with a cycle (a CUDA graph never has one: a hand-edited or generated file)."""
    path = os.fspath(path)
    graph, names = _read_graph(path)
    cycle = find_cycle(graph)
    if cycle is not None:
        labels = [names[i] if names else str(i) for i in cycle]
        if len(labels) > 12:  # a cycle through 200,000 nodes: its two ends
            labels = [*labels[:6], f"… {len(labels) - 11:,} more …", *labels[-5:]]
        shown = " -> ".join(labels)
        edges = set(graph.edges)
        how = "" if all(pair in edges for pair in zip(cycle, cycle[1:])) else " (child graphs that embed each other)"
        raise CgtoolError(f"{path}: not a DAG: cycle through nodes {shown}{how}; a CUDA graph has no cycle",
                          ExitCode.USAGE)
    return graph


def _read_graph(path: str) -> tuple[Graph, list[str] | None]:
    """The graph and, for a driver DOT file, its nodes' names in the file by node id (else None: ids are the names)."""
    text = _read_text(path)
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith(("{", "[")):
        return _from_json(stripped, path), None
    dot = parse_dot(text, path)
    if is_cgtool_dot(dot):
        return read_cgtool_dot(dot, path), None
    if not dot.nodes:
        raise CgtoolError(f"{path}: the DOT graph has no nodes", ExitCode.USAGE)
    graph = graph_from_driver_dot(dot)
    if all(n.kind == "unknown" for n in graph.nodes) and not any(s.startswith("cluster") for s in dot.subgraphs):
        raise CgtoolError(
            f"{path}: a DOT graph, but not a CUDA graph: neither cgtool's graph.dot nor the driver's dump "
            "(cudaGraphDebugDotPrint, CUDAGraph.debug_dump)", ExitCode.USAGE)
    return graph, list(dot.nodes)  # graph_from_driver_dot numbers the nodes in this order


def _read_text(path: str) -> str:
    data = read_input(path, GRAPH)  # regular files only, at most GRAPH.cap bytes: the one reader (files/inputs.py)
    for bom, encoding in _BOMS:  # a file saved as UTF-8 (with a BOM), UTF-16 or UTF-32 by an editor says so in its first bytes
        if data.startswith(bom):
            data = data[len(bom):].decode(encoding, errors="replace").encode("utf-8")
            break
    if not data.strip():
        raise CgtoolError(f"{path} is empty: expected a DOT graph or a report.json", ExitCode.USAGE)
    if b"\0" in data[:4096]:
        raise CgtoolError(f"{path} is a binary file, not a DOT graph or a report.json", ExitCode.USAGE)
    return data.decode("utf-8", errors="replace")


_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF16_LE, "utf-16-le"),
         (codecs.BOM_UTF16_BE, "utf-16-be"))


def _from_json(text: str, path: str) -> Graph:
    data = parse_json(text, path, GRAPH)
    if not isinstance(data, dict):
        raise CgtoolError(f"{path}: JSON, but not a cgtool report or graph", ExitCode.USAGE)
    if "schema" in data and "graph" in data:  # a report.json: only its graph is read here
        graph_data = data["graph"]
        if graph_data is None:
            status = data.get("status")
            ended = f" with status {status}" if isinstance(status, str) else ""
            raise CgtoolError(f"{path} holds no graph: the run ended{ended} before a graph was captured", ExitCode.USAGE)
        return _graph(graph_data, path, "the report's graph is unreadable")
    if "nodes" in data and "edges" in data:
        return _graph(data, path, "a graph JSON with a bad node or edge")
    raise CgtoolError(f"{path}: JSON, but neither a cgtool report.json nor a graph", ExitCode.USAGE)


def _graph(data: object, path: str, what: str) -> Graph:
    try:
        return Graph.from_json(data)  # type: ignore[arg-type]
    except ValueError as exc:
        raise CgtoolError(f"{path}: {what}: {exc}", ExitCode.USAGE) from None
