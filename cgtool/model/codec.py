"""One codec between records (dataclasses) and JSON values, driven by `dataclasses.fields()` and the type hints.

A record subclasses `Record` and gets `to_json()` / `from_json()`. Writing walks the fields in order (or in
`JSON_ORDER`), adds the read-only keys of `JSON_COMPUTED` and recurses into records, lists, tuples and dicts;
reading casts each key by its field's type (records, `X | None`, lists, tuples, dicts, int/float/bool, enums,
and any class with its own `from_json`, such as `Graph`). What a field's JSON does differently is its metadata
(`field(metadata=meta(...))`): another key, left out when None or empty, a writer or a reader of its own, or
read but not written. Legacy shapes go through the class's `json_in` hook before reading; `json_out` may
change the written dict last. Pure: no torch, no I/O (docs/report-schema.md describes the JSON itself).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar, Union, get_args, get_origin, get_type_hints

R = TypeVar("R", bound="Record")
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
    return {_META: _FieldMeta(key, omit, write, read, written)}


@dataclasses.dataclass(frozen=True)
class _FieldMeta:
    key: str | None
    omit: Omit | None
    write: Writer | None
    read: Reader | None
    written: bool


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    key: str
    omit: Omit | None
    write: Writer
    read: Reader
    written: bool
    required: bool  # no default: a missing key is an error (a field that may be None reads as None)


@dataclasses.dataclass(frozen=True)
class _Spec:
    fields: tuple[_Field, ...]
    order: tuple[str, ...]  # every written key, fields and computed, in writing order


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
        if not isinstance(d, Mapping):
            raise ValueError(f"{cls.__name__}: expected a JSON object, got {type(d).__name__}")
        return d

    def json_out(self, d: dict[str, Any]) -> dict[str, Any]:
        """The written JSON; override to drop or reshape keys the fields alone cannot say."""
        return d


def encode(record: Record) -> dict[str, Any]:
    """The record's JSON object (plain dicts, lists and scalars)."""
    spec = _spec(type(record))
    values: dict[str, Any] = {}
    for f in spec.fields:
        if not f.written:
            continue
        value = getattr(record, f.name)
        if f.omit is not None and f.omit(value):
            continue
        values[f.key] = f.write(value)
    computed = type(record).JSON_COMPUTED
    out = {k: values[k] if k in values else encode_value(computed[k](record)) for k in spec.order
           if k in values or k in computed}
    return record.json_out(out)


def decode(cls: type[R], data: Any) -> R:
    """The record of type `cls` from its JSON object (any readable schema, through `cls.json_in`)."""
    spec = _spec(cls)
    d = cls.json_in(data)
    kwargs: dict[str, Any] = {}
    for f in spec.fields:
        if f.key in d:
            kwargs[f.name] = f.read(d[f.key])
        elif f.required:
            raise KeyError(f.key)
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


_SPECS: dict[type, _Spec] = {}


def _spec(cls: type) -> _Spec:
    spec = _SPECS.get(cls)
    if spec is None:
        spec = _SPECS[cls] = _make_spec(cls)
    return spec


def _make_spec(cls: type) -> _Spec:
    if not dataclasses.is_dataclass(cls) or not issubclass(cls, Record):
        raise TypeError(f"{cls.__name__} is not a dataclass Record")
    hints = get_type_hints(cls)
    out: list[_Field] = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        m: _FieldMeta = f.metadata.get(_META) or _FieldMeta(None, None, None, None, True)
        tp = hints[f.name]
        no_default = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out.append(_Field(f.name, m.key or f.name, m.omit, m.write or encode_value, m.read or reader(tp), m.written,
                          no_default and not _admits_none(tp)))
    written = [f.key for f in out if f.written]
    order = cls.JSON_ORDER or (*written, *cls.JSON_COMPUTED)
    missing = set(written) - set(order)
    if missing:  # a new field must take its place in the written order, never silently vanish from the JSON
        raise TypeError(f"{cls.__name__}.JSON_ORDER lacks {sorted(missing)}: add the new keys where they belong")
    unknown = set(order) - set(written) - set(cls.JSON_COMPUTED)
    if unknown:
        raise TypeError(f"{cls.__name__}.JSON_ORDER names {sorted(unknown)}: neither a field nor in JSON_COMPUTED")
    return _Spec(tuple(out), tuple(order))


def _admits_none(tp: Any) -> bool:
    return tp is Any or (get_origin(tp) in (Union, types.UnionType) and type(None) in get_args(tp))


def _same(value: Any) -> Any:
    return value


def reader(tp: Any) -> Reader:
    """How a JSON value becomes a value of type `tp` (a type hint)."""
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):
        kinds = [a for a in args if a is not type(None)]
        if len(kinds) != 1:
            return _same
        inner = reader(kinds[0])
        return lambda v: None if v is None else inner(v)
    if origin in (list, Sequence):
        item = reader(args[0]) if args else _same
        return lambda v: [item(x) for x in v]
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            each = reader(args[0])
            return lambda v: tuple(each(x) for x in v)
        parts = [reader(a) for a in args]
        return lambda v: tuple(p(x) for p, x in zip(parts, v))
    if origin in (dict, Mapping):
        value = reader(args[1]) if args else _same
        return lambda v: {k: value(x) for k, x in v.items()}
    if origin is frozenset:
        each = reader(args[0]) if args else _same
        return lambda v: frozenset(each(x) for x in v)
    return _class_reader(tp)


def _class_reader(tp: Any) -> Reader:
    if not isinstance(tp, type):
        return _same
    if issubclass(tp, Record):
        return lambda v: decode(tp, v)
    if issubclass(tp, bool):
        return bool
    if issubclass(tp, enum.Enum):
        return tp
    if tp in (int, float):
        return tp
    from_json = getattr(tp, "from_json", None)
    return from_json if callable(from_json) else _same


__all__ = ["Record", "decode", "encode", "encode_value", "finite", "is_empty", "is_negative", "is_none", "meta",
           "null_as", "reader", "rounded"]
