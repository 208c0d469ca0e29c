"""The one reader of every file a user gives cgtool: scripts, DOT graphs, report.json, bench JSON, histograms
and pyproject.toml. Regular files only (a FIFO, device, socket or folder is refused at once, never opened for
reading, so nothing blocks), at most a size per kind (reading stops one byte past it, so an endless input cannot
fill memory), JSON and TOML at most MAX_NESTING levels deep; every refusal is a CgtoolError (exit 2) worded
the same way for every kind: `PATH is a FIFO, not a regular file; give a DOT graph or report.json.`"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from dataclasses import dataclass
from typing import Any

from cgtool.errors import CgtoolError, ExitCode

MiB = 2**20
# Lists, objects, arrays and inline tables nested deeper than this are refused before they are parsed: cgtool's
# own files nest about 10 levels, and Python's JSON and TOML readers recurse once per level.
MAX_NESTING = 64


@dataclass(frozen=True)
class InputKind:
    """What a file is for: `what` names it in messages ("a Python script"), `cap` its most bytes."""

    what: str
    cap: int


# The caps are documented in README ("Inputs"); a file past its cap is refused, not truncated.
SCRIPT = InputKind("a Python script", 64 * MiB)
GRAPH = InputKind("a DOT graph or report.json", 512 * MiB)  # a driver dump of a very large graph runs to 100s of MiB
BENCH_REPORT = InputKind("a bench report (the JSON of bench --out)", 256 * MiB)
HISTOGRAM = InputKind("a batch histogram (JSON)", 64 * MiB)
CONFIG = InputKind("a pyproject.toml", 16 * MiB)

_TYPES = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def check_input(path: str, kind: InputKind) -> None:
    """Refuse `path` unless it is a regular file (through symlinks) cgtool may read: CgtoolError (exit 2)."""
    _regular(path, kind)


def read_input(path: str, kind: InputKind) -> bytes:
    """The bytes of `path`, a regular file of at most kind.cap bytes; anything else is a CgtoolError (exit 2)."""
    _regular(path, kind)
    try:  # O_NONBLOCK: a FIFO swapped in after the check must not block the open
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _unreadable(path, exc) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped for a FIFO or device since the check
            raise _not_regular(path, st.st_mode, kind)
        chunks, size = [], 0
        while size <= kind.cap:  # a file that grows while read (or a /proc file that never ends) stops at cap + 1
            chunk = os.read(fd, min(MiB, kind.cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise _unreadable(path, exc) from None
    finally:
        os.close(fd)
    if size > kind.cap:
        raise _too_large(path, kind)
    return b"".join(chunks)


def read_text(path: str, kind: InputKind) -> str:
    """read_input decoded as UTF-8 (a BOM is dropped); bytes that are not UTF-8 are a CgtoolError (exit 2)."""
    data = read_input(path, kind)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CgtoolError(f"{path}: not UTF-8 text (byte {exc.start}); give {kind.what}.", ExitCode.USAGE) from None


def parse_json(text: str, path: str, kind: InputKind) -> Any:
    """The JSON document in `text` (read from `path`): malformed, too deep or with a number too long to read
    is a CgtoolError (exit 2) that says so."""
    check_nesting(_JSON_ESCAPE.sub("", text), path, kind, _JSON_STRING)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CgtoolError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); is the file truncated?",
                          ExitCode.USAGE) from None
    except RecursionError:  # not reached after check_nesting; kept so no reader ever shows one
        raise _too_deep(path, kind) from None
    except ValueError:  # an integer of more than 4300 digits (Python's int_max_str_digits)
        raise CgtoolError(f"{path}: JSON with a number too long to read; give {kind.what}.", ExitCode.USAGE) from None


def read_json(path: str, kind: InputKind) -> Any:
    """read_text, then parse_json."""
    return parse_json(read_text(path, kind), path, kind)


def parse_toml(text: str, path: str, kind: InputKind = CONFIG) -> dict[str, Any]:
    """The TOML document in `text`; malformed or too deep is a CgtoolError (exit 2)."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        try:
            import tomli as tomllib
        except ImportError:
            raise CgtoolError(f"{path}: reading TOML on Python {sys.version_info.major}.{sys.version_info.minor} "
                              "needs the 'tomli' package: pip install tomli", ExitCode.ENVIRONMENT) from None
    check_nesting(text, path, kind, _TOML_SKIP)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CgtoolError(f"{path}: not valid TOML: {exc}", ExitCode.USAGE) from None
    except RecursionError:
        raise _too_deep(path, kind) from None


# Strings (and TOML's comments) hold brackets that nest nothing: they are dropped before counting.
_JSON_SKIP = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
# The same in two passes, each a simple scan, in half the time on a 2 MB report.json: escapes dropped, then strings
# (outside a string JSON has no backslash)
_JSON_ESCAPE = re.compile(r"\\.", re.S)
_JSON_STRING = re.compile(r'"[^"]*"')
_TOML_SKIP = re.compile(r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"|\'[^\'\n]*\'|#[^\n]*',
                        re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_PAIR = re.compile(r"\[\]|\{\}")


def check_nesting(text: str, path: str, kind: InputKind, skip: re.Pattern[str] = _JSON_SKIP) -> None:
    """CgtoolError (exit 2) when `text` nests lists or tables more than MAX_NESTING levels deep. Counted on the
    brackets alone, innermost pairs removed one level per pass (each pass a C-speed regex, at most MAX_NESTING)."""
    brackets = _NOT_BRACKET.sub("", skip.sub("", text))
    for _ in range(MAX_NESTING):
        if not brackets:
            return
        fewer = _PAIR.sub("", brackets)
        if fewer == brackets:
            break
        brackets = fewer
    # Left: pairs deeper than MAX_NESTING, or brackets that never close (a truncated file: the parser says so,
    # unless so many are open that the parser itself would recurse too deep).
    if _PAIR.search(brackets) or brackets.count("[") + brackets.count("{") > MAX_NESTING:
        raise _too_deep(path, kind)


def _regular(path: str, kind: InputKind) -> os.stat_result:
    if not path:
        raise CgtoolError(f"An empty file name; give {kind.what}.", ExitCode.USAGE)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise CgtoolError(f"{path} is a symlink to {os.path.realpath(path)}, which does not exist; "
                              f"give {kind.what}.", ExitCode.USAGE) from None
        raise CgtoolError(f"No such file: {path}", ExitCode.USAGE) from None
    except OSError as exc:
        raise _unreadable(path, exc) from None
    if stat.S_ISDIR(st.st_mode):
        raise CgtoolError(f"{path} is a folder, not a regular file; give {kind.what}.", ExitCode.USAGE)
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(path, st.st_mode, kind)
    if st.st_size > kind.cap:  # refused before reading; a file whose size lies (/proc) stops at cap + 1 bytes
        raise _too_large(path, kind)
    return st


def _not_regular(path: str, mode: int, kind: InputKind) -> CgtoolError:
    what = next((name for test, name in _TYPES if test(mode)), "a special file")
    return CgtoolError(f"{path} is {what}, not a regular file; give {kind.what}.", ExitCode.USAGE)


def _unreadable(path: str, exc: OSError) -> CgtoolError:
    if exc.errno == errno.ELOOP:
        return CgtoolError(f"Cannot read {path}: a loop of symlinks.", ExitCode.USAGE)
    return CgtoolError(f"Cannot read {path}: {exc.strerror or exc}.", ExitCode.USAGE)


def _too_large(path: str, kind: InputKind) -> CgtoolError:
    return CgtoolError(f"{path} is larger than {kind.cap // MiB} MiB, the most cgtool reads as {kind.what}.",
                       ExitCode.USAGE)


def _too_deep(path: str, kind: InputKind) -> CgtoolError:
    return CgtoolError(f"{path}: nested more than {MAX_NESTING} levels deep; give {kind.what}.", ExitCode.USAGE)
