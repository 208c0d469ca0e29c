"""bench's option parsers: sizes (`--sizes`), a memory budget (`--memory-budget`), a batch range
(`--batch-range`), each a click callback that turns a bad value into a usage error."""

from __future__ import annotations

import click


def sizes(ctx: click.Context, param: click.Parameter, value: str | None) -> list[int] | None:
    from cgtool.bench.size_inputs import parse_sizes

    if value is None:  # not given; an empty --sizes '' is an error
        return None
    try:
        return parse_sizes(value)
    except ValueError as exc:
        raise click.BadParameter(f"{exc} (e.g. 1,2,4,8 or 1:256 or 8:64:8)") from None


def budget(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    from cgtool.bench.size_inputs import parse_bytes

    if value is None:
        return None
    try:
        return parse_bytes(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def batch_range(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, int] | None:
    from cgtool.model.limits import NUMBER_TEXT, parse_number

    if value is None:
        return None
    low, _, high = value.partition(":")
    lo, hi = parse_number(low, whole=True), parse_number(high, whole=True)
    if lo is None or hi is None:
        raise click.BadParameter(f"expected LOW:HIGH, e.g. 1:256, got {value!r} ({NUMBER_TEXT})")
    if not 1 <= lo <= hi:
        raise click.BadParameter(f"expected 1 <= LOW <= HIGH, got {value!r}")
    return int(lo), int(hi)
