"""Reading a bench report back from disk (`--compare BASELINE.json`): every way the file can be wrong is a
CgtoolError (exit 2) that says what is wrong, never Python's own words."""

from __future__ import annotations

import json
from pathlib import Path

from cgtool.bench.result import BenchReport
from cgtool.errors import CgtoolError, ExitCode


def read_bench_report(path: str | Path) -> BenchReport:
    """Load a bench report written by `cgtool bench --json/--out`; a CgtoolError (exit 2) says what is wrong."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CgtoolError(f"No such file: {p}", ExitCode.USAGE) from None
    except IsADirectoryError:
        raise CgtoolError(f"{p} is a folder: give the bench JSON written by --out", ExitCode.USAGE) from None
    except OSError as exc:
        raise CgtoolError(f"Cannot read bench report {p}: {exc.strerror or exc}", ExitCode.USAGE) from None
    except UnicodeDecodeError:
        raise CgtoolError(f"{p}: not a bench report: the file is not UTF-8 text", ExitCode.USAGE) from None
    except json.JSONDecodeError as exc:
        raise CgtoolError(f"{p}:{exc.lineno}: not valid JSON ({exc.msg}); is the file truncated?", ExitCode.USAGE) from None
    except RecursionError:
        raise CgtoolError(f"{p}: JSON nested too deeply to be a bench report", ExitCode.USAGE) from None
    except ValueError:  # an integer of more than 4300 digits
        raise CgtoolError(f"{p}: JSON with a number too long to read: not a bench report", ExitCode.USAGE) from None
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
