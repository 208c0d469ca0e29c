"""Graphviz record labels (`{KERNEL | {ID | 0} | …}`) as nested lists, and the driver's key/value tables in them."""

from __future__ import annotations

import re
from typing import Union

Field = Union[str, "list[Field]"]

_SPLIT = re.compile(r"(\\.|[{}|])", re.S)
_PORT = re.compile(r"<[^>]*>")
_ESCAPE = re.compile(r"\\(.)", re.S)
_BREAK = re.compile(r"\\[nlr]")
_LINE_BREAKS = {"n": "\n", "l": "\n", "r": "\n"}


def unescape(text: str) -> str:
    """Record text with its escapes resolved: `\\<` is `<`, `\\{` is `{`, `\\n` a newline."""
    if "\\" not in text:
        return text
    if _BREAK.search(text):
        return _ESCAPE.sub(lambda m: _LINE_BREAKS.get(m.group(1), m.group(1)), text)
    return _ESCAPE.sub(r"\1", text)  # no Python call per escape: kernel names have many


def parse_record(label: str) -> list[Field]:
    """The fields of a record label; a field is a stripped string or a list of fields (a `{…}` group).

    Unbalanced braces (a hand-edited or cut label) are closed at the end rather than rejected.
    """
    stack: list[list[Field]] = [[]]
    text: list[str] = []
    group: list[Field] | None = None  # the group just closed, which is the current field

    def end_field() -> None:
        stack[-1].append(group if group is not None else "".join(text).strip())

    for tok in _SPLIT.split(label):
        if not tok:
            continue
        if tok == "{":
            stack.append([])
            text, group = [], None
        elif tok == "}":
            end_field()
            text, group = [], (stack.pop() if len(stack) > 1 else None)  # a stray '}' is ignored
        elif tok == "|":
            end_field()
            text, group = [], None
        elif tok[0] == "\\" and len(tok) == 2:
            text.append(_LINE_BREAKS.get(tok[1], tok[1]))
        else:
            text.append(_PORT.sub("", tok) if "<" in tok else tok)
    end_field()
    while len(stack) > 1:
        inner = stack.pop()
        stack[-1].append(inner)
    fields = [f for f in stack[0] if f != ""]
    if len(fields) == 1 and isinstance(fields[0], list):
        return fields[0]
    return fields


def record_fields(fields: list[Field]) -> dict[str, str]:
    """Flatten the driver's tables into "key" → "value", e.g. "Extent.Width" → "4096".

    The driver writes three table shapes: `{key | value}`, `{{k1 | k2} | {v1 | v2}}` and
    `{title | {k1 | k2} | {v1 | v2}}` (or `{{title1 | title2} | {keys…} | {values…}}`).
    """
    out: dict[str, str] = {}
    for f in fields:
        f = _unwrap(f)
        if isinstance(f, list):
            _table(f, "", out)
    return out


def _unwrap(f: Field) -> Field:
    while isinstance(f, list) and len(f) == 1:
        f = f[0]
    return f


def _keys(group: Field, titled: bool = True) -> list[str]:
    """Key paths of a header group: `{a | {loc | {type | id}}}` is a, loc.type, loc.id. A top-level
    `{title | {…}}` is read as titled keys unless `titled` is False (the count decides, see _zip)."""
    group = _unwrap(group)
    if isinstance(group, str):
        return [group]
    if titled and len(group) == 2 and isinstance(group[0], str) and isinstance(_unwrap(group[1]), list):
        return [f"{group[0]}.{k}" for k in _keys(group[1])]
    return [k for g in group for k in _keys(g)]


def _leaves(group: Field) -> list[str] | None:
    group = _unwrap(group)
    if isinstance(group, str):
        return None
    values = [v for v in map(_unwrap, group) if isinstance(v, str)]
    return values if len(values) == len(group) else None


def _table(kids: list[Field], prefix: str, out: dict[str, str]) -> None:
    kids = [_unwrap(k) for k in kids]
    words = [k for k in kids if isinstance(k, str)]
    if len(words) == len(kids):
        if len(words) >= 2:
            out[prefix + words[0]] = words[1]
            for j, extra in enumerate(words[2:], 2):
                out[f"{prefix}{words[0]}#{j}"] = extra
        return
    pairs = [p for p in (_leaves(k) if isinstance(k, list) else None for k in kids) if p is not None and len(p) == 2]
    # {{x | 0} | {y | 0} | {z | 0}}; two such rows read as {{keys} | {values}} below, as the driver means
    if len(kids) > 2 and len(pairs) == len(kids):
        for key, value in pairs:
            out[prefix + key] = value
        return
    if len(kids) == 2 and isinstance(kids[0], str):
        _table(kids[1] if isinstance(kids[1], list) else [kids[1]], f"{prefix}{kids[0]}.", out)
        return
    if len(kids) == 2 and _zip(kids[0], _leaves(kids[1]), prefix, out):
        return
    if len(kids) == 3 and isinstance(kids[0], str):
        if _zip(kids[1], _leaves(kids[2]), f"{prefix}{kids[0]}.", out):
            return
    if len(kids) == 3 and isinstance(kids[0], list) and isinstance(kids[1], list):
        heads, keys, values = _keys(kids[0]), _keys(kids[1]), _leaves(kids[2])
        if values is not None and 0 < len(heads) < len(keys) == len(values) and len(keys) % len(heads) == 0:
            per = len(keys) // len(heads)
            for i, (k, v) in enumerate(zip(keys, values)):
                out[f"{prefix}{heads[i // per]}.{k}"] = v
            return
    for kid in kids:
        if isinstance(kid, list):
            _table(kid, prefix, out)


def _zip(header: Field, values: list[str] | None, prefix: str, out: dict[str, str]) -> bool:
    """Pair a header group's keys with a row of values, if some reading of the header fits the row."""
    if values is None:
        return False
    for keys in (_keys(header), _keys(header, titled=False)):
        if len(keys) == len(values):
            for k, v in zip(keys, values):
                out[prefix + k] = v
            return True
    return False
