"""What the DOT reader (graph/dotfile.py) returns: plain nodes, edges, subgraphs and the file, and the value of a
quoted DOT string."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class DotNode:
    name: str
    attrs: dict[str, str]
    subgraph: str | None  # innermost subgraph the node was first mentioned in; None = the root graph


@dataclass(slots=True)
class DotEdge:
    tail: str
    head: str
    attrs: dict[str, str]


@dataclass(slots=True)
class DotSubgraph:
    name: str
    parent: str | None
    attrs: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class DotFile:
    name: str
    directed: bool
    attrs: dict[str, str]
    nodes: dict[str, DotNode]  # in order of first mention
    edges: list[DotEdge]
    subgraphs: dict[str, DotSubgraph]  # in order of appearance


def unquote(raw: str) -> str:
    """A quoted DOT string's value: `\\"` becomes `"` and backslash-newline joins lines; other escapes
    (`\\n`, `\\l`, `\\<` in records) stay, because they belong to the label language, not DOT."""
    body = raw[1:-1]
    if '\\"' in body:
        body = body.replace('\\"', '"')
    if "\\\n" in body:
        body = body.replace("\\\r\n", "").replace("\\\n", "")
    return body
