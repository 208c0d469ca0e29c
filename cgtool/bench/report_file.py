"""Reading a bench report back from disk (`--compare BASELINE.json`): every way the file can be wrong is a
CgtoolError (exit 2) that says what is wrong, never Python's own words."""

from __future__ import annotations

from pathlib import Path

from cgtool.bench.result import BenchReport
from cgtool.errors import CgtoolError, ExitCode
from cgtool.files.inputs import BENCH_REPORT, read_json


def read_bench_report(path: str | Path) -> BenchReport:
    """Load a bench report written by `cgtool bench --json/--out`; a CgtoolError (exit 2) says what is wrong."""
    p = Path(path)
    data = read_json(str(p), BENCH_REPORT)  # the one reader: regular files only, bounded size and nesting
    try:
        return BenchReport.from_json(data)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, OverflowError) as exc:
        raise CgtoolError(f"{p} is not a usable cgtool bench report: {_reason(exc)}", ExitCode.USAGE) from None


def _reason(exc: BaseException) -> str:
    """A loader's exception in words, without Python's repr of the exception."""
    if isinstance(exc, KeyError):
        return f"the field \"{exc.args[0]}\" is missing" if exc.args else "a field is missing"
    text = str(exc)
    if isinstance(exc, ValueError) and not text.startswith(("could not convert", "invalid literal")):
        return text  # one of the loaders' own messages
    return "a field holds the wrong kind of value (text, a list or null where a number or an object belongs)"
