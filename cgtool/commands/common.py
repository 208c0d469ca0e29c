"""What the script-running commands share: options, the job, the worker run with progress, exit codes."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable

import click

from cgtool.errors import ExitCode

if TYPE_CHECKING:  # loaded when a command runs, not when the CLI starts
    from cgtool.model.job import Job, Settings
    from cgtool.model.report import Report
    from cgtool.pipeline.result import PartialResult
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


def run_with_progress(job: Job, timeout: float, show: bool) -> WorkerOutcome:
    """Run the job in the worker; show the phases on stderr while it runs."""
    from cgtool.render.console import console
    from cgtool.worker.client import run_job

    if not show:
        return run_job(job, timeout)
    err = console(stderr=True)
    with err.status("starting worker…") as status:
        def on_event(event: dict[str, Any]) -> None:
            if event.get("phase"):
                detail = f" ({event['detail']})" if event.get("detail") else ""
                status.update(f"{event['phase']}{detail}…")
                err.print(f"[dim]{event.get('t', 0):7.2f}s  {event['phase']}{detail}[/]", soft_wrap=True)

        return run_job(job, timeout, on_event)


def exit_code_for(report: Report, outcome: WorkerOutcome) -> ExitCode:
    """capture's exit code: the report and how the worker ended (model/exit_codes.py: capture_exit)."""
    from cgtool.model.exit_codes import capture_exit

    return capture_exit(report, outcome.failure)


def run_partial_jobs(job: Job, timeout: float, show: bool) -> tuple[PartialResult, WorkerOutcome]:
    """The partial-capture job (settings piecewise / modules) in workers of its own: on a GPU the pieced step
    first, rerun once in a fresh worker without keeping the pieces' graphs when the first run asks for it
    (a failed run can leave torch's allocator broken in its process), then the module map in another worker
    (torch.compile's state and a failed piecewise run stay out of it). Returns the merged sections and the
    last worker's outcome (the failed one, if one failed); a worker that fails ends the runs."""
    from dataclasses import replace

    from cgtool.pipeline.result import PartialResult

    outcome = run_with_progress(job, timeout, show)
    runs = [outcome]
    first = outcome.result
    if first is None or first.partial is None:
        return PartialResult(), outcome
    merged = PartialResult(first.partial.piecewise, first.partial.modules, list(first.partial.errors))
    if first.rerun_piecewise:
        why = first.rerun_piecewise
        second = run_with_progress(replace(job, settings=replace(job.settings, modules=None, keep_graphs=False)),
                                   timeout, show)
        runs.append(second)
        again = second.result.partial if second.result is not None else None
        if again is not None and again.piecewise is not None:
            note = again.piecewise.note
            merged.piecewise = replace(again.piecewise, note=f"{note} ({why})" if note else why)
            merged.errors += again.errors
    if first.modules_pending and not any(r.failure == "interrupted" for r in runs):
        third = run_with_progress(replace(job, settings=replace(job.settings, piecewise=False)), timeout, show)
        runs.append(third)
        last = third.result.partial if third.result is not None else None
        if last is not None:
            merged.modules = last.modules
            merged.errors += last.errors
    failed = next((r for r in runs if r.result is None), None)
    return merged, failed or runs[-1]


def run_partial(job: Job, report: Report, timeout: float, show: bool, piecewise: bool, modules: int | None) -> None:
    """The partial-capture job in its own worker (a failed whole-step capture can spoil the CUDA context);
    its sections and errors go into `report`."""
    from cgtool.model.job import PARTIAL, Job, PartialSettings, carry_over
    from cgtool.model.report import ErrorRecord

    part = Job(PARTIAL, job.script, job.entry, carry_over(job.settings, PartialSettings, piecewise=piecewise,
                                                          modules=modules), job.force_cpu)
    result, outcome = run_partial_jobs(part, timeout, show)
    if outcome.result is None:
        report.errors.append(ErrorRecord(outcome.phase or "partial", outcome.failure or "crash", outcome.message))
    report.piecewise, report.modules = result.piecewise, result.modules
    known = {(e.phase, e.message) for e in report.errors}
    report.errors.extend(e for e in result.errors if (e.phase, e.message) not in known)
