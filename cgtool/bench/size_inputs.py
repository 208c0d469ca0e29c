"""What the user says a sweep and its plan are about, parsed and checked: the sizes to sweep (`--sizes`), the
memory budget (`--memory-budget`) and the batches to plan for (`--histogram`, `--batch-range`). A ValueError
names what is wrong; the commands turn it into a usage error. Pure parsing: no torch, no I/O."""

from __future__ import annotations

import math
from collections.abc import Mapping

from cgtool.model.limits import NUMBER_TEXT, parse_number


def range_histogram(low: int, high: int) -> dict[int, float]:
    """Every batch size from low to high, equally likely."""
    if not 1 <= low <= high:
        raise ValueError(f"a batch range needs 1 <= low <= high, got {low}:{high}")
    return {b: 1.0 for b in range(low, high + 1)}


def parse_histogram(data: object) -> dict[int, float]:
    """A histogram from JSON: {"batch": count, ...} or a list of observed batch sizes."""
    hist: dict[int, float] = {}
    if isinstance(data, Mapping):
        items = list(data.items())
    elif isinstance(data, list):
        items = [(b, 1) for b in data]
    else:
        raise ValueError("a histogram is a JSON object {\"batch\": count} or a list of batch sizes")
    for b, w in items:
        size, weight = _number(b, whole=True), _number(w, whole=False)
        if size is None or weight is None:
            raise ValueError(f"not a batch size and a count: {b!r}: {w!r}")
        if size < 1 or weight < 0 or not math.isfinite(weight):
            raise ValueError(f"batch sizes must be >= 1 and counts >= 0, got {b!r}: {w!r}")
        hist[int(size)] = hist.get(int(size), 0.0) + weight
    if sum(hist.values()) <= 0:
        raise ValueError("the histogram has no weight")
    return hist


MAX_SWEEP_SIZES = 256  # --sizes: a sweep captures and times each size; more is a usage error (README, docs/bench.md)


def parse_sizes(text: str) -> list[int]:
    """`1,2,4,8`; `LOW:HIGH` doubles from LOW (LOW, 2*LOW, ...) and ends with HIGH (`3:100` is 3, 6, ..., 96, 100); `LOW:HIGH:STEP` for a range."""
    sizes: list[int] = []
    if not text.strip():
        raise ValueError("no size given")
    for part in (p.strip() for p in text.split(",")):
        if not part:
            raise ValueError(f"an empty size between commas in {text!r}")
        if ":" not in part:
            sizes.append(_whole(part))
            continue
        bits = [_whole(b) for b in part.split(":")]
        if len(bits) not in (2, 3) or bits[0] < 1 or bits[1] < bits[0] or (len(bits) == 3 and bits[2] < 1):
            raise ValueError(f"a size range is LOW:HIGH or LOW:HIGH:STEP with 1 <= LOW <= HIGH, got {part!r}")
        if len(bits) == 3:
            steps = range(bits[0], bits[1] + 1, bits[2])
            if len(steps) > MAX_SWEEP_SIZES:  # counted before the list is made: 1:10**11:1 is refused at once
                raise ValueError(f"{part!r} is {len(steps):,} sizes; a sweep measures at most {MAX_SWEEP_SIZES} sizes "
                                 "(each is captured and timed): widen STEP or narrow the range")
            sizes += list(steps)
        else:
            n = bits[0]
            while n < bits[1]:
                sizes.append(n)
                n *= 2
            sizes.append(bits[1])
    if not sizes or any(s < 1 for s in sizes):
        raise ValueError("sizes must be positive whole numbers")
    unique = list(dict.fromkeys(sizes))
    if len(unique) > MAX_SWEEP_SIZES:
        raise ValueError(f"{len(unique)} sizes; a sweep measures at most {MAX_SWEEP_SIZES} (each is captured and timed)")
    return unique


def parse_bytes(text: str) -> int:
    """`512MiB`, `2GiB`, `1.5G`, `300M`, or a plain number of bytes (binary units: K, M, G = 2**10, 2**20, 2**30)."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}.get(t[-1:], 1) if t else 1
    value = parse_number(t[:-1] if scale > 1 else t, whole=False)
    if value is None:
        raise ValueError(f"not a memory size: {text!r} (write e.g. 512MiB or 2GiB; {NUMBER_TEXT})")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"a memory size must be positive, got {text!r}")
    return int(value * scale)


def _number(value: object, whole: bool) -> float | None:
    """A histogram's key or count: a JSON number (a whole one for `whole`), or text written as NUMBER_TEXT says."""
    if isinstance(value, str):
        return parse_number(value, whole)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if whole:
        return value if isinstance(value, int) else int(value) if math.isfinite(value) and value.is_integer() else None
    try:
        return float(value)
    except OverflowError:  # an integer past float's range
        return None


def _whole(text: str) -> int:
    number = parse_number(text, whole=True)
    if number is None:
        raise ValueError(f"expected whole numbers, got {text!r} ({NUMBER_TEXT})")
    return int(number)
