"""What capture, lint and bench do with `--nproc-per-node N` (or under the user's torchrun): run the job on
every rank, merge, write the folder, print, pick the exit code. Not a command itself (as common.py)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import click

from cgtool.commands.common import Number
from cgtool.errors import CgtoolError, ExitCode

if TYPE_CHECKING:
    from cgtool.model.job import Job
    from cgtool.model.ranks import DistReport


def nproc_option(fn: Any) -> Any:
    return click.option("--nproc-per-node", "nproc", type=Number("nproc"), default=None, metavar="N",
                        help="Run the step on N ranks (one GPU each) through torch.distributed.run; every rank is "
                             "captured and the reports merged (docs/distributed.md). Under torchrun this is automatic.")(fn)


def ranks_to_start(nproc: int | None, script: str) -> int | None:
    """--nproc-per-node as given; without it (and outside a torchrun), 1 for a script written for ranks: a
    plain run analyses it as a world of one rank (docs/distributed.md)."""
    from cgtool.script.ranks import written_for_ranks
    from cgtool.worker.distributed import under_torchrun

    if nproc or under_torchrun():
        return nproc
    return 1 if written_for_ranks(script) else None


def wants_distributed(nproc: int | None) -> bool:
    from cgtool.worker.distributed import under_torchrun

    return bool(nproc) or under_torchrun()


def warmup_given() -> bool:
    ctx = click.get_current_context()
    return ctx.get_parameter_source("warmup") != click.core.ParameterSource.DEFAULT


def run(job: Job, nproc: int | None, timeout: float, show: bool) -> tuple[DistReport | None, Any]:
    """Run the job on the ranks with progress on stderr; (merged report or None on a rank ≠ 0, outcome)."""
    from cgtool.model.job import Job as JobType
    from cgtool.render.console import console
    from cgtool.worker.distributed import dist_settings, run_as_rank, run_distributed

    if job.kind != "capture":
        raise CgtoolError("internal: distributed runs take capture jobs", ExitCode.USAGE)
    job = JobType(job.kind, job.script, job.entry, dist_settings(job.settings, timeout, warmup_given()),
                  job.force_cpu, job.work_dir)
    err = console(stderr=True)

    def on_event(rank: int, event: dict[str, Any]) -> None:
        if show and event.get("phase"):
            detail = f" ({event['detail']})" if event.get("detail") else ""
            err.print(f"[dim]rank {rank} {event.get('t', 0):7.2f}s  {event['phase']}{detail}[/]", soft_wrap=True)

    if nproc:
        from cgtool.worker.launch import check_nproc

        check_nproc(nproc)
        return run_distributed(job, nproc, timeout, on_event)
    return run_as_rank(job, timeout, on_event)


def exit_code(report: DistReport | None, outcome: Any) -> ExitCode:
    if outcome.failure == "interrupted":
        return ExitCode.INTERRUPTED
    if outcome.failure == "launcher":
        return ExitCode.WORKER
    if report is None:  # a rank other than 0 under the user's torchrun: its own result
        rank = outcome.ranks[0] if outcome.ranks else None
        if rank is None or rank.failed:
            return ExitCode.PROBLEMS
        # as rank 0 says for the run: 3 when it ran on CPU only (then every torchrun agent sees its worker end
        # alike and leaves at once, instead of waiting at torchrun's exit barrier for an agent that failed)
        return ExitCode.ENVIRONMENT if rank.report is not None and rank.report.status == "cpu-only" else ExitCode.OK
    reports = [r.report for r in report.ranks]
    if any(e.type == "usage" for r in reports if r for e in r.errors):
        return ExitCode.USAGE
    problems = (report.errors or any(f.severity == "error" for f in report.all_findings())
                or any(r.failed for r in report.ranks)
                or any(r.replay is not None and r.replay.status in ("mismatch", "error") for r in reports if r))
    if outcome.failure == "timeout" and not any(f.severity == "error" for f in report.all_findings()):
        return ExitCode.WORKER  # a hang cgtool cannot explain: as a single worker's timeout
    if problems:
        return ExitCode.PROBLEMS
    if all(r is not None and r.status == "cpu-only" for r in reports):
        return ExitCode.ENVIRONMENT
    return ExitCode.OK


def capture_distributed(job: Job, nproc: int | None, timeout: float, out_dir: str | None, as_json: bool,
                        quiet: bool) -> None:
    import json

    from cgtool.render.console import console
    from cgtool.render.distributed import dist_files, render_dist_report
    from cgtool.render.files import write_output
    from cgtool.render.outputs import prepare_out_dir

    stem = os.path.splitext(os.path.basename(job.script))[0]
    out_dir = prepare_out_dir(out_dir or os.path.join("cgtool-out", stem))
    report, outcome = run(job, nproc, timeout, show=not (as_json or quiet))
    if report is not None and report.ranks:
        from cgtool.worker.distributed import under_torchrun
        from cgtool.worker.whole_step import complete_reports

        if not under_torchrun():  # a rank whose capture failed gets the CPU analysis of the whole step (one, as rank 0)
            complete_reports(job, [r.report for r in report.ranks if r.report is not None], timeout, world_of_one=True)
    if report is None:
        sys.exit(exit_code(report, outcome))  # rank 0 writes and prints the merged report
    for name, text in dist_files(report).items():
        path = os.path.join(out_dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_output(path, text)
        report.outputs[name] = path
    write_output(os.path.join(out_dir, "report.json"), json.dumps(report.to_json(), indent=1) + "\n")
    if as_json:
        sys.stdout.write(json.dumps(report.to_json(), indent=1) + "\n")
    else:
        render_dist_report(report, console(), quiet=quiet)
    sys.exit(exit_code(report, outcome))
