"""The numeric options and `[tool.cgtool]` values, one range each: finite, in range, the same rule wherever
the value comes from (a command-line option or the config); `check_number` names that place in its error."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from cgtool.errors import CgtoolError, ExitCode

DAY_S = 86400.0
# Steps the replay check compares when the user does not say (--check-steps; capture/compare_runs.py): enough for
# a training step's optimizer moments, momentum, scheduler, BatchNorm and step counters to move from step to step
# (the ResNet plan of issue 36 matched eager for two steps and differed from the third).
CHECK_STEPS = 6


@dataclass(frozen=True)
class Limit:
    low: float
    high: float
    whole: bool = False  # an integer (a count), not a float
    unit: str = ""  # "seconds", "percent", "iterations", ...
    why: str = ""  # what the bounds protect, said in the error

    def describe(self) -> str:
        kind = "a whole number" if self.whole else "a finite number"
        unit = f" {self.unit}" if self.unit else ""
        why = f" ({self.why})" if self.why else ""
        return f"{kind} from {_num(self.low)} to {_num(self.high)}{unit}{why}"


LIMITS: dict[str, Limit] = {
    "timeout": Limit(1, 7 * DAY_S, unit="seconds", why="the worker's hang protection"),
    "warmup": Limit(1, 1000, whole=True, unit="iterations"),
    "lint_warmup": Limit(2, 1000, whole=True, unit="iterations", why="lint compares iterations"),
    "budget_s": Limit(0.5, DAY_S, unit="seconds"),
    "ci": Limit(0.01, 50, unit="percent"),
    "fail_if_slower": Limit(0, 1e6, unit="percent"),
    "fail_on_growth": Limit(0, 1e6, unit="percent"),
    "iters": Limit(1, 10_000_000, whole=True, unit="iterations"),
    "max_sizes": Limit(1, 10_000, whole=True, unit="sizes"),
    "max_nodes": Limit(1, 10_000_000, whole=True, unit="nodes"),
    "jobs": Limit(1, 256, whole=True, unit="workers"),
    "modules": Limit(0, 64, whole=True, unit="levels"),
    "check_steps": Limit(1, 10_000, whole=True, unit="steps"),
    "nproc": Limit(1, 4096, whole=True, unit="ranks"),
}


def check_number(value: Any, name: str, where: str, from_text: bool = False) -> int | float:
    """`value` (a number; text too, `from_text`, for the command line) checked against LIMITS[name]; a
    CgtoolError (exit 2) that names `where` (an option, or the config file and key) otherwise."""
    limit = LIMITS[name]
    number = None if isinstance(value, str) and not from_text else _parse(value, limit.whole)
    if number is None or not limit.low <= number <= limit.high:
        hint = f" ({NUMBER_TEXT})" if isinstance(value, str) and not _ASCII_NUMBER.match(value.strip()) else ""
        raise CgtoolError(f"{where} must be {limit.describe()}; got {_show(value)}{hint}", ExitCode.USAGE)
    return number


# Numbers written as text (options, --sizes, --batch-range, --memory-budget, a histogram's keys): ASCII digits,
# a sign, a decimal point and an exponent. Python's int() and float() would also take `1_0` (10) and other
# scripts' digits (`٣`, 3); a typo or a pasted value should not turn silently into a number.
NUMBER_TEXT = "numbers are written with the ASCII digits 0-9, without _ separators"
_ASCII_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z", re.ASCII)
_ASCII_WHOLE = re.compile(r"[+-]?[0-9]+\Z", re.ASCII)


def parse_number(text: str, whole: bool) -> int | float | None:
    """`text` (surrounding spaces aside) as a whole number (`whole`) or a float, written in ASCII (NUMBER_TEXT);
    None for anything else (`1_0`, `٣`, `inf`, `0x10`, ``)."""
    text = text.strip()
    if not (_ASCII_WHOLE if whole else _ASCII_NUMBER).match(text):
        return None
    try:
        return int(text, 10) if whole else float(text)
    except ValueError:  # more than 4,300 digits (Python's int_max_str_digits)
        return None


def _parse(value: Any, whole: bool) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = parse_number(value, whole)
        if value is None:
            return None
    if whole:
        return value if isinstance(value, int) else None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def _num(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def _show(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
