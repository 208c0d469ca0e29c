"""One codec between records (dataclasses) and JSON values, driven by `dataclasses.fields()` and the type hints.

A record subclasses `Record` and gets `to_json()` / `from_json()`. Writing walks the fields in order (or in
`JSON_ORDER`), adds the read-only keys of `JSON_COMPUTED` and recurses into records, lists, tuples and dicts;
reading converts each key by its field's type (records, `X | None`, lists, tuples, dicts, enums, any class with
its own `from_json` such as `Graph`; a field's own int, float or bool is cast). What a field's JSON does differently is its metadata
(`field(metadata=meta(...))`, cgtool/model/codec_meta.py): another key, left out when None or empty, a writer or a reader of its own, or
read but not written. Legacy shapes go through the class's `json_in` hook before reading; `json_out` may
change the written dict last. Each class's encoder is generated once, as dataclasses makes __init__.
Pure: no torch, no I/O (docs/report-schema.md describes the JSON itself).
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar, Union, get_args, get_origin

from cgtool.graph.model import json_type
from cgtool.model.codec_meta import (  # a field's own JSON behaviour, importable from here as before
    FieldMeta, Omit, Reader, Writer, field_meta, finite, is_empty, is_negative, is_none, meta, null_as, rounded)

R = TypeVar("R", bound="Record")


# A plain class, not a dataclass, as FieldMeta (codec_meta.py): `cgtool --help` imports this module.
class _Write:
    __slots__ = ("key", "name", "omit", "write", "compute")

    def __init__(self, key: str, name: str = "", omit: Omit | None = None, write: Writer | None = None,
                 compute: Callable[[Any], Any] | None = None) -> None:
        self.key, self.name, self.omit = key, name, omit  # name: the field written ("" for a computed key)
        self.write = write  # None: the value as it is
        self.compute = compute  # a computed key: its value from the record


class Record:
    """Base of every record with a JSON form: `to_json()` and `from_json()` through the codec.

    Class attributes a record may set: `JSON_ORDER` (the written keys in order, computed ones included; default:
    the fields, then `JSON_COMPUTED`), `JSON_COMPUTED` (key -> function of the record: written, never read). Hooks:
    `json_in(d)` (a classmethod: the JSON of an older schema, or a check of `schema`, before reading) and
    `json_out(d)` (the written dict, last)."""

    __slots__ = ()
    JSON_ORDER: ClassVar[tuple[str, ...]] = ()
    JSON_COMPUTED: ClassVar[Mapping[str, Callable[[Any], Any]]] = {}

    def to_json(self) -> dict[str, Any]:
        return encode(self)

    @classmethod
    def from_json(cls: type[R], d: Mapping[str, Any]) -> R:
        return decode(cls, d)

    @classmethod
    def json_in(cls, d: Any) -> Mapping[str, Any]:
        """The JSON as this version reads it; override for legacy shapes and schema checks."""
        if not isinstance(d, (dict, Mapping)):
            raise ValueError(f"{_words(cls.__name__)} is {json_type(d)} where an object belongs")
        return d

    def json_out(self, d: dict[str, Any]) -> dict[str, Any]:
        """The written JSON; override to drop or reshape keys the fields alone cannot say."""
        return d


def _words(name: str) -> str:
    """A record's class name as words for a message ("ErrorRecord" -> "an error record")."""
    words = "".join(" " + c.lower() if c.isupper() else c for c in name).strip()
    return ("an " if words[:1] in "aeiou" else "a ") + words


def encode(record: Record) -> dict[str, Any]:
    """The record's JSON object (plain dicts, lists and scalars)."""
    cls = type(record)
    made = _ENCODERS.get(cls)
    if made is None:
        made = _ENCODERS[cls] = _compile_encoder(cls, _writes(cls))
    return made(record)


def decode(cls: type[R], data: Any) -> R:
    """The record of type `cls` from its JSON object (any readable schema, through `cls.json_in`)."""
    reads = _DECODERS.get(cls)
    if reads is None:
        reads = _DECODERS[cls] = _reads(cls)
    d = cls.json_in(data)
    kwargs: dict[str, Any] = {}
    for name, key, read, required in reads:
        if key in d:
            kwargs[name] = d[key] if read is None else read(d[key])
        elif required:
            raise KeyError(key)
    return cls(**kwargs)


def encode_value(value: Any) -> Any:
    """Any value as JSON: records and objects with their own `to_json`, sequences as lists, dicts, enums."""
    if isinstance(value, Record):
        return encode(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [encode_value(v) for v in value]
    if isinstance(value, dict):
        return {k: encode_value(v) for k, v in value.items()}
    if isinstance(value, enum.Enum):
        return value.value
    to_json = getattr(value, "to_json", None)
    return to_json() if callable(to_json) else value


# Each class's encoder (generated code) and decoder (its fields' readers), made at its first use: a process that
# only reads (`cgtool dot report.json`) compiles nothing
_ENCODERS: dict[type, Callable[[Any], dict[str, Any]]] = {}
_DECODERS: dict[type, list[tuple[str, str, Reader | None, bool]]] = {}


def _record_fields(cls: type) -> list[tuple[dataclasses.Field[Any], FieldMeta, Any]]:
    if not dataclasses.is_dataclass(cls) or not issubclass(cls, Record):
        raise TypeError(f"{cls.__name__} is not a dataclass Record")
    return [(f, field_meta(f), _hint(cls, f.type)) for f in dataclasses.fields(cls) if f.init]


def _reads(cls: type) -> list[tuple[str, str, Reader | None, bool]]:
    """Per field: its name, its key, its reader (None: the JSON value as it is), whether the key must be there (no
    default, and None is not a value it takes)."""
    return [(f.name, m.key or f.name, m.read or _reader(tp, cast=True),
             f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and not _admits_none(tp))
            for f, m, tp in _record_fields(cls)]


def _writes(cls: type) -> list[_Write]:
    """What is written, in order: the written fields and the computed keys."""
    fields = {m.key or f.name: _Write(m.key or f.name, f.name, m.omit, m.write or _writer(tp))
              for f, m, tp in _record_fields(cls) if m.written}
    computed = getattr(cls, "JSON_COMPUTED", {})
    order = getattr(cls, "JSON_ORDER", ()) or (*fields, *computed)
    missing = set(fields) - set(order)
    if missing:  # a new field must take its place in the written order, never silently vanish from the JSON
        raise TypeError(f"{cls.__name__}.JSON_ORDER lacks {sorted(missing)}: add the new keys where they belong")
    unknown = set(order) - set(fields) - set(computed)
    if unknown:
        raise TypeError(f"{cls.__name__}.JSON_ORDER names {sorted(unknown)}: neither a field nor in JSON_COMPUTED")
    return [fields[k] if k in fields else _Write(k, compute=computed[k]) for k in order]


_HINTS: dict[tuple[str, str], Any] = {}


def _hint(cls: type, annotation: Any) -> Any:
    """A field's type from its annotation (a string under `from __future__ import annotations`), evaluated in its
    module: typing.get_type_hints walks the whole class hierarchy and costs five times as much at first use."""
    if not isinstance(annotation, str):
        return annotation
    key = (cls.__module__, annotation)
    if key not in _HINTS:
        _HINTS[key] = eval(annotation, vars(sys.modules[cls.__module__]))  # the class's own annotation text
    return _HINTS[key]


# A class's encoder is generated Python, as dataclasses makes __init__: a loop over the fields costs three times a
# hand-written to_json, and a report's node lists make that count. Reading loops (a compile at first use would
# cost more than it saves in a process that reads one report).
_OMIT_TESTS: dict[Omit, str] = {is_none: "v is not None", is_empty: "v", is_negative: "v >= 0"}
_COPIES: dict[Any, str] = {list: "list({})", dict: "dict({})", tuple: "tuple({})"}


def _compile_encoder(cls: type, writes: list[_Write]) -> Callable[[Any], dict[str, Any]]:
    env: dict[str, Any] = {"encode_value": encode_value}
    lines = ["def encode(r):", " out = {}"]
    for i, w in enumerate(writes):
        if w.compute is not None:
            env[f"compute{i}"] = w.compute
            lines.append(f" out[{w.key!r}] = encode_value(compute{i}(r))")
            continue
        env[f"write{i}"], env[f"omit{i}"] = w.write, w.omit
        value = "v" if w.write is None else _COPIES.get(w.write, f"write{i}({{}})").format("v")
        lines.append(f" v = r.{w.name}")
        if w.omit is None:
            lines.append(f" out[{w.key!r}] = {value}")
        else:
            lines.append(f" if {_OMIT_TESTS.get(w.omit, f'not omit{i}(v)')}:")
            lines.append(f"  out[{w.key!r}] = {value}")
    reshapes = getattr(cls, "json_out", None) is not Record.json_out
    lines.append(" return r.json_out(out)" if reshapes else " return out")
    return _compiled(cls, "encode", lines, env)


def _compiled(cls: type, name: str, lines: list[str], env: dict[str, Any]) -> Callable[[Any], dict[str, Any]]:
    exec("\n".join(lines), env)  # the source names only the class's own fields and keys (repr'd)
    made: Callable[[Any], dict[str, Any]] = env[name]
    made.__qualname__ = f"{cls.__qualname__}.<codec {name}>"
    return made


def _admits_none(tp: Any) -> bool:
    return tp is Any or (get_origin(tp) in (Union, types.UnionType) and type(None) in get_args(tp))


def _same(value: Any) -> Any:
    return value


def reader(tp: Any) -> Reader:
    """How a JSON value becomes a value of type `tp` (a type hint), as a field of that type reads it."""
    return _reader(tp, cast=True) or _same


_SCALARS = (str, int, float, bool)


def _reader(tp: Any, cast: bool) -> Reader | None:
    """None: the JSON value as it is. `cast`: a field's own int, float or bool is cast (inside lists and dicts
    JSON's own scalars are kept: the hot path of a long list)."""
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):
        kinds = [a for a in args if a is not type(None)]
        inner = _reader(kinds[0], cast) if len(kinds) == 1 else None
        return None if inner is None else lambda v: None if v is None else inner(v)
    if origin in (list, Sequence, tuple, frozenset):
        make: Callable[[Any], Any] = list if origin in (list, Sequence) else frozenset if origin is frozenset else tuple
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            parts = [_reader(a, cast=False) for a in args]
            if any(p is not None for p in parts):
                return lambda v: tuple(x if p is None else p(x) for p, x in zip(parts, v))
            return tuple
        item = _reader(args[0], cast=False) if args else None
        return make if item is None else lambda v: make(item(x) for x in v)
    if origin in (dict, Mapping):
        value = _reader(args[1], cast=False) if args else None
        return dict if value is None else lambda v: {k: value(x) for k, x in v.items()}
    if not isinstance(tp, type):
        return None
    if issubclass(tp, Record):
        return lambda v: decode(tp, v)
    if issubclass(tp, enum.Enum):
        return tp
    if tp in _SCALARS:
        return tp if cast and tp is not str else None
    from_json = getattr(tp, "from_json", None)
    return from_json if callable(from_json) else None


def _writer(tp: Any) -> Writer | None:
    """None: the value is written as it is (a str, int, float or bool field)."""
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):
        kinds = [a for a in args if a is not type(None)]
        inner = _writer(kinds[0]) if len(kinds) == 1 else encode_value
        return None if inner is None else lambda v: None if v is None else inner(v)
    if origin in (list, Sequence, tuple, frozenset):
        homogeneous = origin is not tuple or (len(args) == 2 and args[1] is Ellipsis)
        item = _writer(args[0]) if args and homogeneous else encode_value
        return list if item is None else lambda v: [item(x) for x in v]
    if origin in (dict, Mapping):
        value = _writer(args[1]) if args else encode_value
        return dict if value is None else lambda v: {k: value(x) for k, x in v.items()}
    if isinstance(tp, type) and tp in _SCALARS:
        return None
    if isinstance(tp, type) and issubclass(tp, Record):
        return encode
    return encode_value


__all__ = ["Record", "decode", "encode", "encode_value", "finite", "is_empty", "is_negative", "is_none", "meta",
           "null_as", "reader", "rounded"]
