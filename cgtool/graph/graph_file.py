"""Read a graph from whatever file the user has: report.json, cgtool's graph.dot, or a driver DOT dump."""

from __future__ import annotations

import json
import os

from cgtool.errors import EXIT_USAGE, CgtoolError
from cgtool.graph.cgtool_dot import is_cgtool_dot, read_cgtool_dot
from cgtool.graph.dotfile import parse_dot
from cgtool.graph.driver_dot import graph_from_driver_dot
from cgtool.graph.model import Graph


def read_graph_file(path: str | os.PathLike[str]) -> Graph:
    """The Graph in `path`, sniffed from its content: JSON (report.json or a bare graph), cgtool DOT
    (graph attribute cg_format) or driver DOT. Anything unreadable is a CgtoolError(EXIT_USAGE)."""
    path = os.fspath(path)
    text = _read_text(path)
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith(("{", "[")):
        return _from_json(stripped, path)
    dot = parse_dot(text, path)
    if is_cgtool_dot(dot):
        return read_cgtool_dot(dot, path)
    if not dot.nodes:
        raise CgtoolError(f"{path}: the DOT graph has no nodes", EXIT_USAGE)
    graph = graph_from_driver_dot(dot)
    if all(n.kind == "unknown" for n in graph.nodes) and not any(s.startswith("cluster") for s in dot.subgraphs):
        raise CgtoolError(
            f"{path}: a DOT graph, but not a CUDA graph: neither cgtool's graph.dot nor the driver's dump "
            "(cudaGraphDebugDotPrint, CUDAGraph.debug_dump)", EXIT_USAGE)
    return graph


def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise CgtoolError(f"No such file: {path}", EXIT_USAGE) from None
    except IsADirectoryError:
        raise CgtoolError(f"{path} is a folder: give a report.json, graph.dot or driver DOT file", EXIT_USAGE) from None
    except OSError as exc:
        raise CgtoolError(f"Cannot read {path}: {exc.strerror or exc}", EXIT_USAGE) from None
    if not data.strip():
        raise CgtoolError(f"{path} is empty: expected a DOT graph or a report.json", EXIT_USAGE)
    if b"\0" in data[:4096]:
        raise CgtoolError(f"{path} is a binary file, not a DOT graph or a report.json", EXIT_USAGE)
    return data.decode("utf-8", errors="replace")


def _from_json(text: str, path: str) -> Graph:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CgtoolError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); is the file truncated?", EXIT_USAGE) from None
    if not isinstance(data, dict):
        raise CgtoolError(f"{path}: JSON, but not a cgtool report or graph", EXIT_USAGE)
    if "schema" in data and "graph" in data:  # a report.json
        from cgtool.report import Report

        try:
            report = Report.from_json(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise CgtoolError(f"{path}: not a readable cgtool report ({exc})", EXIT_USAGE) from None
        if report.graph is None:
            raise CgtoolError(f"{path} holds no graph: the run ended with status {report.status!r}", EXIT_USAGE)
        try:
            return _checked(report.graph)
        except ValueError as exc:
            raise CgtoolError(f"{path}: the report's graph is inconsistent ({exc})", EXIT_USAGE) from None
    if "nodes" in data and "edges" in data:
        try:
            return _checked(Graph.from_json(data))
        except (KeyError, TypeError, ValueError) as exc:
            raise CgtoolError(f"{path}: a graph JSON with a bad node or edge ({exc})", EXIT_USAGE) from None
    raise CgtoolError(f"{path}: JSON, but neither a cgtool report.json nor a graph", EXIT_USAGE)


def _checked(graph: Graph) -> Graph:
    """Node ids must be their index and edges must name existing nodes: everything else relies on it."""
    n = len(graph.nodes)
    if any(node.id != i for i, node in enumerate(graph.nodes)):
        raise ValueError("node ids are not 0..n-1 in order")
    if any(not (0 <= a < n and 0 <= b < n) for a, b in graph.edges):
        raise ValueError("an edge names a node that does not exist")
    return graph
