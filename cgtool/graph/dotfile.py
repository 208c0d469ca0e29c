"""A small, fast reader for the Graphviz DOT language: statements in, plain nodes/edges/subgraphs out.

Written for multi-megabyte driver dumps: one regular expression tokenizes (quoted labels are single
tokens), a recursive-descent parser builds the result. Errors name the file and line.
"""

from __future__ import annotations

import re

from cgtool.errors import CgtoolError, ExitCode
from cgtool.graph.dot_records import DotEdge, DotFile, DotNode, DotSubgraph, unquote

_TOKEN = re.compile(
    r"""(?:[ \t\r\n\f\v]+|//[^\n]*|/\*.*?\*/|\#[^\n]*)*   # whitespace and comments before a token
    (?:(?P<q>"[^"\\]*(?:\\.[^"\\]*)*")
      |(?P<id>[A-Za-z_\x80-\U0010ffff][A-Za-z_0-9\x80-\U0010ffff]*|-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?))
      |(?P<op>->|--|[{}\[\];,=:+<])
      |(?P<end>\Z)
      |(?P<bad>.))""",
    re.S | re.X,
)
_KEYWORDS = {"strict", "graph", "digraph", "subgraph", "node", "edge"}
# Subgraphs nested deeper than this are refused with a clear error rather than a RecursionError (the parser
# recurses about four Python frames per level). CUDA graphs nest a few levels: child graphs, conditional bodies.
MAX_DEPTH = 100


def parse_dot(text: str, path: str = "<dot>") -> DotFile:
    """Parse one DOT graph; a CgtoolError(ExitCode.USAGE) with `path:line` for anything malformed."""
    if not text.strip():
        raise CgtoolError(f"{path}: the file is empty: expected a DOT graph", ExitCode.USAGE)
    return _Parser(text, path).parse()


class _Parser:
    def __init__(self, text: str, path: str) -> None:
        self.text, self.path = text, path
        self.kinds: list[str] = []  # "q" quoted, "id", "html", an operator itself, or "end"
        self.values: list[str] = []
        self._starts: list[int] | None = None  # token offsets, computed only for an error message
        self._tokenize()
        self.i = 0
        self.nodes: dict[str, DotNode] = {}
        self.edges: list[DotEdge] = []
        self.subgraphs: dict[str, DotSubgraph] = {}
        self.anon = 0
        self.depth = 0

    # -- tokens ---------------------------------------------------------------------------------
    def _tokenize(self) -> None:
        """findall is the fast path (no match objects); HTML-like ids and bad input take _scan."""
        toks = _TOKEN.findall(self.text)
        if any(op == "<" or bad for _, _, op, _, bad in toks):
            self.kinds, self.values, self._starts = self._scan()
            return
        self.kinds = ["q" if q else "id" if name else op or "end" for q, name, op, _, _ in toks]
        self.values = [unquote(q) if q else name or op for q, name, op, _, _ in toks]

    @property
    def starts(self) -> list[int]:
        """Each token's offset in the text: only error messages need them, so only they pay for them."""
        if self._starts is None:
            self._starts = self._scan()[2]
        return self._starts

    def _scan(self) -> tuple[list[str], list[str], list[int]]:
        text, kinds, values, starts = self.text, [], [], []
        pos = 0
        while True:
            for m in _TOKEN.finditer(text, pos):
                kind, start = m.lastgroup or "bad", m.start(m.lastgroup or "bad")
                if kind == "bad":
                    self._bad_char(start)
                if kind == "op" and m.group("op") == "<":
                    pos, html = self._html(start)
                    kinds.append("html")
                    values.append(html)
                    starts.append(start)
                    break
                kinds.append(m.group("op") if kind == "op" else kind)
                values.append(unquote(m.group("q")) if kind == "q" else m.group(kind))
                starts.append(start)
                if kind == "end":
                    return kinds, values, starts

    def _html(self, start: int) -> tuple[int, str]:
        """An HTML-like id `<...>` with nested angle brackets: (offset after it, its inside)."""
        depth, text = 0, self.text
        for j in range(start, len(text)):
            ch = text[j]
            if ch == "<":
                depth += 1
            elif ch == ">":
                depth -= 1
                if depth == 0:
                    return j + 1, text[start + 1 : j]
        raise self._error(start, "an HTML-like label '<...>' is never closed (is the file truncated?)")

    def _bad_char(self, pos: int) -> None:
        ch = self.text[pos]
        if ch == '"':
            raise self._error(pos, "a quoted string is never closed (is the file truncated?)")
        if self.text.startswith("/*", pos):
            raise self._error(pos, "a /* comment is never closed")
        raise self._error(pos, f"unexpected character {ch!r}: this is not DOT syntax")

    def _error(self, pos: int, message: str) -> CgtoolError:
        line = self.text.count("\n", 0, pos) + 1
        return CgtoolError(f"{self.path}:{line}: {message}", ExitCode.USAGE)

    def _describe(self, i: int) -> str:
        kind = self.kinds[i]
        if kind == "end":
            return "the end of the file"
        value = self.values[i]
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f'"{shown}"' if kind == "q" else repr(shown)

    def _expect(self, kind: str, what: str) -> str:
        i = self.i
        if self.kinds[i] != kind:
            raise self._unexpected(what)
        self.i = i + 1
        return self.values[i]

    def _unexpected(self, what: str) -> CgtoolError:
        found = self._describe(self.i)
        hint = " (is the file truncated?)" if self.kinds[self.i] == "end" else ""
        return self._error(self.starts[self.i], f"expected {what}, found {found}{hint}")

    def _keyword(self, i: int) -> str | None:
        if self.kinds[i] == "id":
            low = self.values[i].lower()
            if low in _KEYWORDS:
                return low
        return None

    def _id(self, what: str) -> str:
        """An ID: a name, a number, a quoted string (with `+` concatenation), or an HTML-like string."""
        kind = self.kinds[self.i]
        if kind == "id" and self._keyword(self.i) is None or kind == "html":
            self.i += 1
            return self.values[self.i - 1]
        if kind != "q":
            raise self._unexpected(what)
        value = self.values[self.i]
        self.i += 1
        while self.kinds[self.i] == "+":
            self.i += 1
            value += self._expect("q", "a quoted string after '+'")
        return value

    def _is_id(self) -> bool:
        kind = self.kinds[self.i]
        return kind in ("q", "html") or (kind == "id" and self._keyword(self.i) is None)

    # -- grammar --------------------------------------------------------------------------------
    def parse(self) -> DotFile:
        if self._keyword(self.i) == "strict":
            self.i += 1
        kw = self._keyword(self.i)
        if kw not in ("graph", "digraph"):
            raise self._unexpected("'digraph' or 'graph' at the start of a DOT file")
        self.i += 1
        name = self._id("a graph name") if self._is_id() else ""
        self._expect("{", "'{' to open the graph")
        attrs: dict[str, str] = {}
        self._stmt_list(None, attrs, {}, {})
        self._expect("}", "'}' to close the graph")
        if self.kinds[self.i] != "end":
            raise self._error(self.starts[self.i], "text after the end of the graph (one graph per file)")
        return DotFile(name, kw == "digraph", attrs, self.nodes, self.edges, self.subgraphs)

    def _stmt_list(self, sub: str | None, gattrs: dict[str, str], ndef: dict[str, str], edef: dict[str, str]) -> list[str]:
        """Statements up to the closing '}'; returns the node names mentioned (for edges to subgraphs)."""
        mentioned: list[str] = []
        kinds = self.kinds
        while kinds[self.i] not in ("}", "end"):
            kw = self._keyword(self.i)
            if kw in ("graph", "node", "edge") and kinds[self.i + 1] == "[":
                self.i += 1
                target = {"graph": gattrs, "node": ndef, "edge": edef}[kw]
                target.update(self._attr_lists())
            elif kinds[self.i + 1] == "=" and self._is_id():
                key = self._id("an attribute name")
                self.i += 1
                gattrs[key] = self._id("an attribute value")
            else:
                tails = self._operand(sub, ndef, edef, mentioned)
                if kinds[self.i] in ("->", "--"):
                    self._edges(tails, sub, ndef, edef, mentioned)
                elif kw is None and len(tails) == 1 and kinds[self.i] == "[":
                    node = self.nodes[tails[0]]
                    node.attrs.update(self._attr_lists())
            if kinds[self.i] in (";", ","):
                self.i += 1
        return mentioned

    def _operand(self, sub: str | None, ndef: dict[str, str], edef: dict[str, str], mentioned: list[str]) -> list[str]:
        kw = self._keyword(self.i)
        if kw == "subgraph" or self.kinds[self.i] == "{":
            return self._subgraph(sub, ndef, edef, mentioned)
        if kw is not None:
            raise self._unexpected("a statement")
        name = self._id("a node name, edge, attribute or subgraph")
        if self.kinds[self.i] == ":":  # port and compass point: not needed for the graph
            self.i += 1
            self._id("a port name")
            if self.kinds[self.i] == ":":
                self.i += 1
                self._id("a compass point")
        if name not in self.nodes:
            self.nodes[name] = DotNode(name, dict(ndef), sub)
        mentioned.append(name)
        return [name]

    def _subgraph(self, parent: str | None, ndef: dict[str, str], edef: dict[str, str], mentioned: list[str]) -> list[str]:
        if self.depth >= MAX_DEPTH:
            raise self._error(self.starts[self.i], f"subgraphs nested more than {MAX_DEPTH} levels deep; cgtool reads "
                                                   f"at most {MAX_DEPTH} (a CUDA graph's DOT nests a few)")
        self.depth += 1
        try:
            return self._subgraph_body(parent, ndef, edef, mentioned)
        finally:
            self.depth -= 1

    def _subgraph_body(self, parent: str | None, ndef: dict[str, str], edef: dict[str, str], mentioned: list[str]) -> list[str]:
        if self._keyword(self.i) == "subgraph":
            self.i += 1
        name = self._id("a subgraph name") if self._is_id() else ""
        if not name:
            self.anon += 1
            name = f"%anonymous{self.anon}"
        sg = self.subgraphs.get(name)
        if sg is None:
            sg = self.subgraphs[name] = DotSubgraph(name, parent)
        self._expect("{", "'{' to open the subgraph")
        inner = self._stmt_list(name, sg.attrs, dict(ndef), dict(edef))
        self._expect("}", f"'}}' to close subgraph {name}")
        mentioned.extend(inner)
        return inner

    def _edges(self, tails: list[str], sub: str | None, ndef: dict[str, str], edef: dict[str, str], mentioned: list[str]) -> None:
        chain = [tails]
        while self.kinds[self.i] in ("->", "--"):
            self.i += 1
            chain.append(self._operand(sub, ndef, edef, mentioned))
        attrs = dict(edef)
        if self.kinds[self.i] == "[":
            attrs.update(self._attr_lists())
        for left, right in zip(chain, chain[1:]):
            for tail in left:
                for head in right:
                    self.edges.append(DotEdge(tail, head, attrs))

    def _attr_lists(self) -> dict[str, str]:
        out: dict[str, str] = {}
        kinds = self.kinds
        while kinds[self.i] == "[":
            self.i += 1
            while kinds[self.i] != "]":
                key = self._id("an attribute name or ']'")
                if kinds[self.i] == "=":
                    self.i += 1
                    out[key] = self._id(f"a value for attribute {key}")
                else:
                    out[key] = "true"
                if kinds[self.i] in (",", ";"):
                    self.i += 1
            self.i += 1
        return out
