"""Shared rich console setup: respects NO_COLOR and non-TTY output; errors go to stderr; a full or closed
stdout becomes one CgtoolError (exit 3) instead of a traceback; control characters from scripts and DOT files
are shown escaped (never sent to a terminal raw); a stdout that cannot encode a character gets an ASCII
stand-in instead of a UnicodeEncodeError."""

from __future__ import annotations

import codecs
import io
import os
import re
import sys
from collections.abc import Iterable
from typing import Any

import rich.text
from rich.console import Console
from rich.segment import Segment
from rich.text import Text

# C0 controls but newline and tab, DEL and C1 controls (ESC [ 2 J clears a screen, OSC sequences set titles, BEL rings)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def escape_controls(text: str) -> str:
    """`text` with every control character but newline and tab written as a visible escape (\\x1b, \\x07); a
    Windows line end (CR LF) is a line end."""
    if not _CONTROLS.search(text):
        return text
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text.replace("\r\n", "\n"))


# rich's Text removes BEL, BS, VT, FF and CR from every string it is given (rich.control.strip_control_codes), before
# any console sees them: a kernel name's BEL would vanish without a word. Every Text escapes them instead, as the
# console escapes ESC and the rest, and the escape's width counts when a table lays out its columns.
def _escape_for_rich(text: str, _translate_table: dict[int, None] | None = None) -> str:
    """rich's strip_control_codes, by its signature: escapes instead of stripping."""
    return escape_controls(text)


rich.text.strip_control_codes = _escape_for_rich


class SafeConsole(Console):
    """A rich Console whose printed text never carries a control character: rich's own styles still colour
    the output (they are added after rendering), but the text of a kernel name or a message is escaped."""

    def render(self, renderable: Any, options: Any = None) -> Iterable[Segment]:
        for seg in super().render(renderable, options):
            if seg.control or not _CONTROLS.search(seg.text):
                yield seg
            else:
                yield Segment(escape_controls(seg.text), seg.style, seg.control)


# What a stdout or stderr that cannot encode a character (PYTHONIOENCODING=ascii, LANG=C) writes instead.
_ASCII = {"·": ".", "×": "x", "→": "->", "←": "<-", "±": "+/-", "…": "...", "—": "-", "–": "-", "≥": ">=",
          "≤": "<=", "µ": "u", "✓": "v", "✗": "x", "•": "*", "−": "-", "≈": "~", "Δ": "d", "│": "|", "─": "-",
          "━": "-", "┃": "|", "█": "#", "°": "deg", "’": "'", "‘": "'", "“": '"', "”": '"'}


def _ascii_stand_in(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    return "".join(_ASCII.get(c, "?") for c in exc.object[exc.start:exc.end]), exc.end


codecs.register_error("cgtool-ascii", _ascii_stand_in)


def _encodes_all(encoding: str | None) -> bool:
    try:
        "·→…✓".encode(encoding or "ascii")
        return True
    except (UnicodeError, LookupError):
        return False

from cgtool.errors import CgtoolError, ExitCode

# Output that is not a terminal (a pipe, a file, a CI log) is never wrapped: lines stay whole for grep.
UNWRAPPED_WIDTH = 100_000

_consoles: dict[bool, Console] = {}


def console(stderr: bool = False) -> Console:
    """The process's rich Console for stdout (or stderr); no colour when NO_COLOR is set; not a terminal:
    no wrapping (long kernel names stay on one line)."""
    if stderr not in _consoles:
        out = SafeConsole(stderr=stderr, no_color=bool(os.environ.get("NO_COLOR")), highlight=False)
        if not out.is_terminal:
            out = SafeConsole(stderr=stderr, no_color=bool(os.environ.get("NO_COLOR")), highlight=False,
                          width=UNWRAPPED_WIDTH, soft_wrap=True)
        _consoles[stderr] = out
    return _consoles[stderr]


def print_error(message: str) -> None:
    """`error: message` on stderr; the message is plain text (`[tool.cgtool]` is not markup)."""
    console(stderr=True).print(Text.assemble(("error:", "bold red"), " ", message), soft_wrap=True)


class _GuardedStdout(io.TextIOWrapper):
    """sys.stdout whose write and flush turn an OSError (a full disk, a closed pipe) into a CgtoolError."""

    def write(self, text: str) -> int:
        try:
            return super().write(text)
        except OSError as exc:
            raise stdout_error(exc) from None

    def flush(self) -> None:
        try:
            super().flush()
        except OSError as exc:
            raise stdout_error(exc) from None


class _ClosedStdout(io.TextIOBase):
    """Stands in for a closed stdout (`cgtool ... >&-`): the first write is an error, not a silent loss."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise CgtoolError("cannot write to standard output: it is closed.", ExitCode.ENVIRONMENT)


def stdout_error(exc: OSError) -> CgtoolError:
    """The one-line error for a write to stdout that failed."""
    reason = "the reader closed the pipe" if isinstance(exc, BrokenPipeError) else exc.strerror or str(exc)
    return CgtoolError(f"cannot write to standard output: {reason}.", ExitCode.ENVIRONMENT)


def guard_stdout() -> None:
    """Make the process's stdout report a full, broken or closed stream as a CgtoolError. Only the real
    stdout is replaced (a test's captured stream is left alone)."""
    err = sys.stderr
    if err is sys.__stderr__ and isinstance(err, io.TextIOWrapper) and not _encodes_all(err.encoding):
        err.reconfigure(errors="cgtool-ascii")
    out = sys.stdout
    if out is None:
        sys.stdout = _ClosedStdout()
        return
    if out is not sys.__stdout__ or type(out) is not io.TextIOWrapper:
        return
    try:
        out.flush()
    except OSError:
        pass
    errors = out.errors if _encodes_all(out.encoding) else "cgtool-ascii"
    sys.stdout = _GuardedStdout(out.buffer, encoding=out.encoding, errors=errors,
                                line_buffering=out.line_buffering, write_through=out.write_through)


def silence_stdout() -> None:
    """After stdout failed: point fd 1 at /dev/null so the interpreter's last flush at exit cannot fail
    again ("Exception ignored ... BrokenPipeError"), and drop what is still buffered."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ is not None else 1)
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
