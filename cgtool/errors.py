"""The one error type a user can cause, and the exit codes cgtool documents (ExitCode)."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Every exit status cgtool uses; commands pick one, `cli.main` turns it into the process's exit."""

    #: captured (or analysed) and clean; for `dot`, the summary was shown
    OK = 0
    #: problems found: error findings, failed capture, replay mismatch, regression, `--fail-on-growth`
    PROBLEMS = 1
    #: usage or input error: bad arguments, missing file, unreadable script, DOT or report
    USAGE = 2
    #: environment: no CUDA device, missing dependency, unwritable output, a full or closed stdout
    ENVIRONMENT = 3
    #: the worker process crashed or hung past --timeout
    WORKER = 4
    #: interrupted (Ctrl-C, SIGINT), as shells report it (128 + SIGINT)
    INTERRUPTED = 130


class CgtoolError(Exception):
    """A failure the user can fix; the CLI prints the message and exits with exit_code."""

    def __init__(self, message: str, exit_code: ExitCode = ExitCode.USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = ExitCode(exit_code)


CTRL_C = "Ctrl-C"  # the name of a stop by SIGINT; SIGTERM and SIGHUP are named by the signal


def interrupted(stop: str = CTRL_C, sentence: bool = False) -> str:
    """How every command names a run that `stop` ended ("Ctrl-C", "SIGTERM", "SIGHUP"): `interrupted (SIGTERM)`;
    `sentence`: capitalized, to begin one."""
    return f"{'I' if sentence else 'i'}nterrupted ({stop})"


def interrupted_status(stop: str = CTRL_C) -> int:
    """The exit status of a run that `stop` ended: 128 + the signal's number, as shells report it (130 for Ctrl-C,
    143 for SIGTERM, 129 for SIGHUP)."""
    import signal

    try:
        return 128 + signal.Signals[stop].value
    except KeyError:  # Ctrl-C
        return ExitCode.INTERRUPTED


def options_refused(given: list[str], where: str, why: str) -> CgtoolError:
    """The usage error for options a mode cannot honour: named, with `where` ("with --piecewise", "on ranks") and
    `why`, never dropped in silence."""
    one = len(given) == 1
    return CgtoolError(f"{', '.join(given)} {'is' if one else 'are'} not supported {where} yet{why}; "
                       f"leave {'it' if one else 'them'} out.", ExitCode.USAGE)
