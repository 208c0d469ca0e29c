"""Error records from exceptions raised while cgtool ran the user's script: the type, the first line of the
message, the user's frames, and the CUDA error the text names."""

from __future__ import annotations

import re

from cgtool.errors import CgtoolError, ExitCode
from cgtool.model.frame import Frame
from cgtool.model.report import ErrorRecord
from cgtool.script.contract import ScriptExit, ScriptRaised, unwrap
from cgtool.script.frames import user_frames_of_traceback

# lines torch appends to a CUDA error's message: never its first line
_CUDA_BOILERPLATE = ("CUDA kernel errors might", "For debugging consider", "Compile with")


def first_line(text: str) -> str:
    """The first line of an error message that says something ("" when none does)."""
    for line in text.strip().splitlines():
        line = line.strip()
        if line and not line.startswith(_CUDA_BOILERPLATE):
            return line
    return ""


_CUDA_ERRORS = (
    ("operation failed due to a previous error during capture", "cudaErrorStreamCaptureInvalidated"),
    ("capturing stream has unjoined work", "cudaErrorStreamCaptureUnjoined"),
    ("operation not permitted when stream is capturing", "cudaErrorStreamCaptureUnsupported"),
    ("operation would make the legacy stream depend on a capturing blocking stream", "cudaErrorStreamCaptureImplicit"),
    ("dependency created on uncaptured work in another stream", "cudaErrorStreamCaptureIsolation"),
    ("capture sequence contains a fork that was not joined", "cudaErrorStreamCaptureUnjoined"),
)



MAX_MESSAGE_CHARS = 2000  # a 10 MB message raised by a step is shown this long, with a count of the rest
REPEATS_KEPT = 3  # of a frame repeated in a row (a RecursionError): the first two, a count, the last


def shorten(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`text`, cut to `limit` characters with a count of what was left out."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def collapse_frames(frames: tuple[Frame, ...]) -> tuple[Frame, ...]:
    """Runs of one frame repeated in a row (a recursion) kept as its first two, a count, and the last."""
    out: list[Frame] = []
    i = 0
    while i < len(frames):
        j = i
        while j < len(frames) and frames[j] == frames[i]:
            j += 1
        if j - i > REPEATS_KEPT:
            f = frames[i]
            out += [f, f, Frame(f.file, f.line, f"[the frame above repeated {j - i - REPEATS_KEPT:,} more times]"), f]
        else:
            out += frames[i:j]
        i = j
    return tuple(out)


def error_record(phase: str, exc: BaseException) -> ErrorRecord:
    """The record of an exception (error_record_of), its message shortened and repeated frames counted."""
    r = error_record_of(phase, exc)
    return ErrorRecord(r.phase, r.type, shorten(r.message), collapse_frames(r.frames), r.cuda_error)


def job_error(exc: BaseException, current: str | None) -> ErrorRecord | None:
    """The record of what stopped a job's run of the script, `current` being the phase it was in: a CgtoolError
    (the script unreadable, its contract broken, the machine unfit) as phase load; the script's exception in the
    phase it raised in (ScriptRaised); its sys.exit(), KeyboardInterrupt or own BaseException (a ScriptExit out of
    a phase, or a BaseException from its code cgtool called outside the contract: a module's forward, a hook).
    None for any other Exception: cgtool's own failure, which each job keeps its own way."""
    if isinstance(exc, CgtoolError):
        return error_record("load", exc)
    if isinstance(exc, ScriptRaised):
        return error_record(exc.phase, exc.exc)
    if isinstance(exc, ScriptExit) or not isinstance(exc, Exception):
        return error_record(current or "load", exc)
    return None


def error_record_of(phase: str, exc: BaseException) -> ErrorRecord:
    """The record of an exception raised while cgtool called the script. A broken script contract that
    cgtool noticed while calling it (a CgtoolError, e.g. setup and inputs both returning `x`) is a
    usage error (exit 2), not the script's exception; one about the machine is an environment error (exit 3)."""
    exc = unwrap(exc)
    if isinstance(exc, CgtoolError):
        return ErrorRecord(phase, "usage" if exc.exit_code == ExitCode.USAGE else "environment", exc.message)
    if isinstance(exc, SystemExit):  # the script called sys.exit(): its choice, reported as the script's error
        return ErrorRecord(phase, "SystemExit", f"the script called sys.exit({exc.code!r})",
                           user_frames_of_traceback(exc.__traceback__))
    if isinstance(exc, KeyboardInterrupt):  # raised by the script itself (a real SIGINT ends the worker)
        text = str(exc).strip()
        return ErrorRecord(phase, "KeyboardInterrupt", text.splitlines()[0] if text else "the script raised KeyboardInterrupt",
                           user_frames_of_traceback(exc.__traceback__))
    text = str(exc).strip()
    return ErrorRecord(phase, type(exc).__name__, text.splitlines()[0] if text else type(exc).__name__,
                       user_frames_of_traceback(exc.__traceback__), cuda_error_name(text[:100_000]))


def cuda_error_name(text: str) -> str | None:
    m = re.search(r"\b(cudaError\w+|CUDA_ERROR_\w+|CUBLAS_STATUS_\w+|CUDNN_STATUS_\w+)\b", text)
    if m:
        return m.group(1)
    low = text.lower()
    for needle, name in _CUDA_ERRORS:
        if needle in low:
            return name
    return None
