"""The one analysis service: a job run to a complete report. `capture`, `lint` (and so `cgtool.check`) and the runs
on ranks come through here; what they do with the report (files, console, exit code) stays in their command.

- `analyse`: one worker (or, for lint, the ranks merged into one report), the report from how it ended, the
  whole-step completion of a failed capture (worker/whole_step.py) and, when asked, partial capture;
- `analyse_ranks`: `--nproc-per-node N` and scripts written for ranks: the ranks' settings, the launch (or this
  rank under the user's torchrun), each failed rank's report completed by one CPU analysis of the whole step;
- `run_partial_jobs`: the partial-capture job in workers of its own (also `bench --piecewise / --modules`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable

from cgtool.model.job import PARTIAL, Job, PartialSettings, carry_over
from cgtool.model.report import WORKER_FAILED, ErrorRecord, Report
from cgtool.worker.client import WorkerOutcome, report_from_outcome, run_job
from cgtool.worker.whole_step import complete_report

if TYPE_CHECKING:
    from cgtool.model.ranks import DistReport
    from cgtool.pipeline.result import PartialResult
    from cgtool.worker.launch import LaunchOutcome

OnEvent = Callable[[dict[str, Any]], None]
INTERRUPTED = "interrupted"


@dataclass
class Analysis:
    """A job's complete report and how its worker ended (`outcome`: None for ranks merged into one report);
    `interrupted`: Ctrl-C (SIGTERM, SIGHUP) or `stop` ended it, and the report says only that much."""

    report: Report
    outcome: WorkerOutcome | None
    interrupted: bool = False


def analyse(job: Job, timeout: float, *, on_event: OnEvent | None = None, stop: threading.Event | None = None,
            partial: tuple[bool, int | None] | None = None, ranks: int | None = None) -> Analysis:
    """Run `job` (a capture job) to a complete report. `on_event` hears the worker's progress events (the job's
    and the partial jobs'); `stop`, set from another thread, ends the run as Ctrl-C does; `partial`
    (piecewise, modules depth) runs partial capture after a worker that ended normally, its sections and errors
    joining the report; `ranks` (lint): the job on that many ranks merged into one report, a world of one for a
    script written for ranks, its whole step analysed as a world of one too."""
    if ranks is not None:
        from cgtool.worker.distributed import lint_report

        merged = lint_report(job, ranks, timeout, stop)
        if merged is None or _stopped(stop):
            return Analysis(_interrupted_report(job), None, interrupted=True)
        return Analysis(complete_report(job, merged, timeout, stop, world_of_one=True), None, _stopped(stop))
    outcome = run_job(job, timeout, on_event, stop)
    report = report_from_outcome(job, outcome)
    if outcome.failure == INTERRUPTED:
        return Analysis(report, outcome, interrupted=True)
    report = complete_report(job, report, timeout, stop)  # a failed capture: the CPU analysis adds what it missed
    if partial is not None and outcome.failure is None and not _stopped(stop):
        _add_partial(job, report, timeout, on_event, *partial)
    return Analysis(report, outcome, _stopped(stop))


def analyse_ranks(job: Job, nproc: int | None, timeout: float, *, warmup_given: bool,
                  on_event: Callable[[int, dict[str, Any]], None] | None = None
                  ) -> tuple[DistReport | None, LaunchOutcome]:
    """`job` on `nproc` ranks started by cgtool (None: this process is a rank of the user's torchrun), with the
    ranks' settings (worker/distributed.py: dist_settings); each rank whose capture failed gets the CPU analysis
    of the whole step (one, as rank 0 of a world of one) unless the user's torchrun started the ranks. Returns
    the merged report (None on a rank other than 0 under torchrun) and how the launch ended."""
    from cgtool.worker.distributed import dist_settings, run_as_rank, run_distributed, under_torchrun
    from cgtool.worker.whole_step import complete_reports

    ranked = replace(job, settings=dist_settings(job.settings, timeout, warmup_given))
    report: DistReport | None
    if nproc:
        from cgtool.worker.launch import check_nproc

        check_nproc(nproc)
        report, outcome = run_distributed(ranked, nproc, timeout, on_event)
    else:
        report, outcome = run_as_rank(ranked, timeout, on_event)
    if report is not None and report.ranks and not under_torchrun():
        complete_reports(job, [r.report for r in report.ranks if r.report is not None], timeout, world_of_one=True)
    return report, outcome


def run_partial_jobs(job: Job, timeout: float, on_event: OnEvent | None = None
                     ) -> tuple[PartialResult, WorkerOutcome]:
    """The partial-capture job (settings piecewise / modules) in workers of its own: on a GPU the pieced step
    first, rerun once in a fresh worker without keeping the pieces' graphs when the first run asks for it
    (a failed run can leave torch's allocator broken in its process), then the module map in another worker
    (torch.compile's state and a failed piecewise run stay out of it). Returns the merged sections and the
    last worker's outcome (the failed one, if one failed); a worker that fails ends the runs."""
    from cgtool.pipeline.result import PartialResult

    outcome = run_job(job, timeout, on_event)
    runs = [outcome]
    first = outcome.result
    if first is None or first.partial is None:
        return PartialResult(), outcome
    merged = PartialResult(first.partial.piecewise, first.partial.modules, list(first.partial.errors))
    if first.rerun_piecewise:
        why = first.rerun_piecewise
        second = run_job(replace(job, settings=replace(job.settings, modules=None, keep_graphs=False)), timeout,
                         on_event)
        runs.append(second)
        again = second.result.partial if second.result is not None else None
        if again is not None and again.piecewise is not None:
            note = again.piecewise.note
            merged.piecewise = replace(again.piecewise, note=f"{note} ({why})" if note else why)
            merged.errors += again.errors
    if first.modules_pending and not any(r.failure == INTERRUPTED for r in runs):
        third = run_job(replace(job, settings=replace(job.settings, piecewise=False)), timeout, on_event)
        runs.append(third)
        last = third.result.partial if third.result is not None else None
        if last is not None:
            merged.modules = last.modules
            merged.errors += last.errors
    failed = next((r for r in runs if r.result is None), None)
    return merged, failed or runs[-1]


def _add_partial(job: Job, report: Report, timeout: float, on_event: OnEvent | None, piecewise: bool,
                 modules: int | None) -> None:
    """The partial-capture job in its own worker (a failed whole-step capture can spoil the CUDA context);
    its sections and errors go into `report`."""
    settings = carry_over(job.settings, PartialSettings, piecewise=piecewise, modules=modules)
    result, outcome = run_partial_jobs(Job(PARTIAL, job.script, job.entry, settings, job.force_cpu), timeout,
                                       on_event)
    if outcome.result is None:
        report.errors.append(ErrorRecord(outcome.phase or "partial", outcome.failure or "crash", outcome.message))
    report.piecewise, report.modules = result.piecewise, result.modules
    known = {(e.phase, e.message) for e in report.errors}
    report.errors.extend(e for e in result.errors if (e.phase, e.message) not in known)


def _stopped(stop: threading.Event | None) -> bool:
    return stop is not None and stop.is_set()


def _interrupted_report(job: Job) -> Report:
    report = Report(job.script, job.entry, status=WORKER_FAILED)
    report.errors.append(ErrorRecord("ranks", INTERRUPTED, "the ranks were stopped before they reported"))
    return report
