"""What the script-running commands share: options, the job, the worker run with progress, exit codes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable

import click

from cgtool.errors import ExitCode

if TYPE_CHECKING:  # loaded when a command runs, not when the CLI starts
    from cgtool.model.job import Job, Settings
    from cgtool.model.report import Report
    from cgtool.worker.client import WorkerOutcome


class Number(click.ParamType):
    """A numeric option checked by model/limits.py (finite, in range): the same rule as `[tool.cgtool]`."""

    def __init__(self, limit: str) -> None:
        from cgtool.model.limits import LIMITS

        self.limit = limit
        self.name = "integer" if LIMITS[limit].whole else "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from cgtool.errors import CgtoolError
        from cgtool.model.limits import check_number

        try:
            return check_number(value, self.limit, "it", from_text=True)
        except CgtoolError as exc:
            self.fail(exc.message, param, ctx)


def script_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--timeout", type=Number("timeout"), default=600, show_default=True,
                      help="Seconds before the worker is stopped (a hang becomes a clear error).")(fn)
    fn = click.option("--warmup", type=Number("warmup"), default=3, show_default=True,
                      help="Eager warmup iterations before capture.")(fn)
    fn = click.option("--entry", default=None,
                      help="Function to capture instead of `step` (a Python identifier the script defines or imports; "
                           "`__init__` or an empty name is a usage error).")(fn)
    fn = click.argument("target", metavar="SCRIPT[:FUNCTION]")(fn)
    return fn


def check_cwd() -> None:
    """The worker starts in this folder: a deleted one would make it die with a puzzling error."""
    from cgtool.errors import CgtoolError

    try:
        os.getcwd()
    except OSError:
        raise CgtoolError("the current folder no longer exists (it was deleted or moved after the shell entered it); "
                          "cd into an existing folder and run again.", ExitCode.ENVIRONMENT) from None


def make_job(target: str, entry: str | None, settings: Settings, force_cpu: bool = False) -> Job:
    """Check the script exists and compiles (cheaply, in this process), then describe the job (its kind: the
    settings' kind)."""
    from cgtool.model.job import Job, kind_of
    from cgtool.script.contract import compile_script, parse_target

    check_cwd()
    path, entry = parse_target(target, entry)
    compile_script(path)  # fail here, before a worker starts, on a missing or invalid script
    return Job(kind_of(settings), os.path.abspath(path), entry, settings, force_cpu)


@contextmanager
def progress(show: bool) -> Iterator[Callable[[dict[str, Any]], None] | None]:
    """While the block runs, the workers' phases on stderr through the callback it yields (None: not shown)."""
    from cgtool.render.console import console

    if not show:
        yield None
        return
    err = console(stderr=True)
    with err.status("starting worker…") as status:
        def on_event(event: dict[str, Any]) -> None:
            if event.get("phase"):
                detail = f" ({event['detail']})" if event.get("detail") else ""
                status.update(f"{event['phase']}{detail}…")
                err.print(f"[dim]{event.get('t', 0):7.2f}s  {event['phase']}{detail}[/]", soft_wrap=True)

        yield on_event



def exit_code_for(report: Report, outcome: WorkerOutcome) -> ExitCode:
    """capture's exit code: the report and how the worker ended (model/exit_codes.py: capture_exit)."""
    from cgtool.model.exit_codes import capture_exit

    return capture_exit(report, outcome.failure)
