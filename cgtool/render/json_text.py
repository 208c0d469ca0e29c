"""report.json's text: laid out as `json.dumps(value, indent=1)` lays it out, except that a long list (a graph's
nodes and edges, node_lines' nodes, ...) has each element on one line of its own, written by json's C encoder.

`json.dumps` with an indent runs CPython's pure-Python encoder over every value; a 3,000-node report is 2.4 MB of
it and took four times as long as its own encoding through the C encoder (which only runs without an indent). A
report with no list longer than LONG_LIST is byte for byte what `json.dumps(value, indent=1)` writes, and any
text this writes reads back (json.loads) to the same value."""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable, Mapping
from json.encoder import encode_basestring_ascii
from typing import Any

LONG_LIST = 50  # a list of more elements than this is written one element per line


def _line_encoder() -> Callable[[Any], str]:
    """One value's JSON text on one line. JSONEncoder.encode (no indent) runs the C encoder but makes a new one per
    call, a third more time over 9,000 elements than the C encoder made once and called directly, as here; where
    there is no C encoder (another Python), JSONEncoder.encode."""
    one_line = json.JSONEncoder(separators=(", ", ": "))
    c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if c_make_encoder is None:
        return one_line.encode
    # the arguments JSONEncoder.iterencode passes: no circular check, json.dumps's own default and NaN handling
    encoder = c_make_encoder(None, one_line.default, encode_basestring_ascii, None, ": ", ", ", False, False, True)
    return lambda value: "".join(encoder(value, 0))


_one_line = _line_encoder()


def json_text(value: Any, *, long_list: int = LONG_LIST, late: Mapping[str, Callable[[], Any]] | None = None) -> str:
    """The JSON text of `value` (plain dicts, lists, tuples and scalars, as json.dumps takes them), ending in a
    newline. A TypeError for a value json.dumps refuses. `late`: keys of the object `value` whose values are made
    (each function called) once the rest is written, and written in their place: a report's `phase_ms` times the
    writing of the report itself."""
    out: list[str] = []
    later = [_Later(made) for made in (late or {}).values()]
    if later:
        value = {**value, **dict(zip(late or {}, later))}
    _write(value, "\n", out, long_list)
    for slot in later:
        text: list[str] = []
        _write(slot.made(), slot.newline, text, long_list)
        out[slot.index] = "".join(text)
    out.append("\n")
    return "".join(out)


class _Later:
    """A value made after the rest: where its text goes (`index` in the output, on a line indented `newline`)."""

    __slots__ = ("made", "index", "newline")

    def __init__(self, made: Callable[[], Any]) -> None:
        self.made, self.index, self.newline = made, -1, "\n"


def _write(value: Any, newline: str, out: list[str], long_list: int) -> None:
    """`newline`: a line break and the indent of the line `value` starts on."""
    put = out.append
    if isinstance(value, dict):
        if not value:
            put("{}")
            return
        inner = newline + " "
        sep = "{" + inner
        for key, item in value.items():
            put(sep + _key(key) + ": ")
            _write(item, inner, out, long_list)
            sep = "," + inner
        put(newline + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            put("[]")
            return
        inner = newline + " "
        if len(value) > long_list:
            put("[" + inner + ("," + inner).join(map(_one_line, value)) + newline + "]")
            return
        sep = "[" + inner
        for item in value:
            put(sep)
            _write(item, inner, out, long_list)
            sep = "," + inner
        put(newline + "]")
    elif isinstance(value, _Later):
        value.index, value.newline = len(out), newline
        put("")
    else:
        put(_one_line(value))


def _key(key: Any) -> str:
    """A dict key as json.dumps writes it: text as it is; a number, true/false or null as its JSON text, quoted."""
    if isinstance(key, str):
        return encode_basestring_ascii(key)
    if isinstance(key, (int, float)) or key is None:
        return encode_basestring_ascii(_one_line(key))
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
