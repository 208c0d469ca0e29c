"""What a record field's JSON does differently from the codec's generic conversion (cgtool/model/codec.py): its
metadata, `dataclasses.field(metadata=meta(...))`, and the small writers, readers and omit tests records pass to
it (left out when None or empty, rounded, infinity as null). Pure: no torch, no I/O."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

Reader = Callable[[Any], Any]
Writer = Callable[[Any], Any]
Omit = Callable[[Any], bool]

_META = "cgtool.json"


def is_none(value: Any) -> bool:
    """`omit=is_none`: the key is left out when the value is None."""
    return value is None


def is_empty(value: Any) -> bool:
    """`omit=is_empty`: the key is left out when the value is falsy ("", 0, False, an empty list or dict, None)."""
    return not value


def is_negative(value: Any) -> bool:
    """`omit=is_negative`: the key is left out for an index of -1 (none)."""
    return bool(value < 0)


def rounded(digits: int) -> Writer:
    """`write=rounded(3)`: a float written to `digits` decimals (None stays None)."""
    return lambda v: None if v is None else round(v, digits)


def finite(value: float) -> float | None:
    """JSON has no infinity: an unbounded value is written as null."""
    return value if math.isfinite(value) else None


def null_as(unbounded: float) -> Reader:
    """`read=null_as(math.inf)`: null reads as the unbounded value `finite` wrote as null."""
    return lambda v: unbounded if v is None else float(v)


def meta(*, key: str | None = None, omit: Omit | None = None, write: Writer | None = None,
         read: Reader | None = None, written: bool = True) -> dict[str, Any]:
    """A field's JSON behaviour, for `dataclasses.field(metadata=...)`: `key` its JSON name (else the field's
    name); `omit(value)` true leaves the key out; `write(value)` / `read(json)` replace the generic conversion;
    `written=False`: read (if the key is there after `json_in`) but never written."""
    return {_META: FieldMeta(key, omit, write, read, written)}


# Plain classes, not dataclasses: `cgtool --help` imports this module, and each dataclass costs its exec at import.
class FieldMeta:
    __slots__ = ("key", "omit", "write", "read", "written")

    def __init__(self, key: str | None, omit: Omit | None, write: Writer | None, read: Reader | None,
                 written: bool) -> None:
        self.key, self.omit, self.write, self.read, self.written = key, omit, write, read, written


def field_meta(f: dataclasses.Field[Any]) -> FieldMeta:
    """The field's JSON behaviour: what `meta(...)` gave it, or the generic conversion under its own name."""
    found: FieldMeta | None = f.metadata.get(_META)
    return found or FieldMeta(None, None, None, None, True)
