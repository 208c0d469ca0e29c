"""What the script-running commands share: options, the job, the worker run with progress, exit codes."""

from __future__ import annotations

import os
from typing import Any, Callable

import click

from cgtool.errors import EXIT_ENVIRONMENT, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_WORKER
from cgtool.report import CAPTURED, CPU_ONLY, WORKER_FAILED, ErrorRecord, Report
from cgtool.worker import WorkerOutcome, run_job


def script_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--timeout", type=click.FloatRange(min=1), default=600, show_default=True,
                      help="Seconds before the worker is stopped (a hang becomes a clear error).")(fn)
    fn = click.option("--warmup", type=click.IntRange(min=1), default=3, show_default=True,
                      help="Eager warmup iterations before capture.")(fn)
    fn = click.option("--entry", default=None, help="Function to capture instead of `step`.")(fn)
    fn = click.argument("target", metavar="SCRIPT[:FUNCTION]")(fn)
    return fn


def make_job(kind: str, target: str, entry: str | None, warmup: int, force_cpu: bool = False,
             settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """Check the script exists and compiles (cheaply, in this process), then describe the job."""
    from cgtool.script import compile_script, parse_target

    path, entry = parse_target(target, entry)
    compile_script(path)  # fail here, before a worker starts, on a missing or invalid script
    return {"kind": kind, "script": os.path.abspath(path), "entry": entry, "force_cpu": force_cpu,
            "settings": {"warmup": warmup, **(settings or {})}}


def run_with_progress(job: dict[str, Any], timeout: float, show: bool) -> WorkerOutcome:
    """Run the job in the worker; show the phases on stderr while it runs."""
    from cgtool.render.console import console

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


def report_from_outcome(job: dict[str, Any], outcome: WorkerOutcome) -> Report:
    """The worker's report, or a report that explains why the worker gave none."""
    if outcome.result is not None:
        report = Report.from_json(outcome.result)
    else:
        from cgtool import __version__

        report = Report(script=job["script"], entry=job["entry"], settings=job.get("settings", {}),
                        cgtool_version=__version__, status=WORKER_FAILED)
        report.errors.append(ErrorRecord(outcome.phase or "worker", outcome.failure or "crash", outcome.message))
    report.script_output = outcome.output
    return report


def exit_code_for(report: Report, outcome: WorkerOutcome) -> int:
    if outcome.failure == "interrupted":
        return 130
    if report.status == WORKER_FAILED:
        return EXIT_WORKER
    if any(e.type == "usage" for e in report.errors):
        return EXIT_USAGE
    if report.errors or any(f.severity == "error" for f in report.findings):
        return EXIT_PROBLEMS
    if report.replay is not None and report.replay.status == "mismatch":
        return EXIT_PROBLEMS
    if report.status == CPU_ONLY:
        return EXIT_ENVIRONMENT
    return EXIT_OK if report.status == CAPTURED else EXIT_PROBLEMS
