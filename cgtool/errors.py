"""The one error type a user can cause, and the exit codes cgtool documents."""

from __future__ import annotations

EXIT_OK = 0  # captured (or analysed) and clean
EXIT_PROBLEMS = 1  # problems found: error findings, failed capture, replay mismatch, regression
EXIT_USAGE = 2  # usage or input error: bad arguments, missing file, unreadable script or DOT
EXIT_ENVIRONMENT = 3  # environment: no CUDA device, missing dependency, unwritable output
EXIT_WORKER = 4  # the worker process crashed, hung past --timeout, or was interrupted


class CgtoolError(Exception):
    """A failure the user can fix; the CLI prints the message and exits with exit_code."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
