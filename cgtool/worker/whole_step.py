"""Every hazard in one run: a capture that failed on the GPU stopped at its first failure, so the rest of the
step was never traced during capture. The CPU analysis of the whole step (the CUDA stand-ins, in a second
worker) finds what comes after; its findings join the GPU's, marked not-reached (docs/checks.md)."""

from __future__ import annotations

import threading
from dataclasses import replace

from cgtool.checks.verdict import complete_with_whole_step
from cgtool.model.job import Job
from cgtool.model.report import CAPTURE_FAILED, CPU_ONLY, WORKER_FAILED, Report
from cgtool.model.report_parts import WHOLE_STEP, Skip
from cgtool.worker.client import report_from_outcome, run_job


def needs_whole_step(job: Job, report: Report) -> bool:
    """A GPU run whose capture failed, or whose worker died while capturing (a poisoned context that took the
    process down: no report came back), with the checks on. A step compiled with CUDA graphs is not captured by
    cgtool: torch.compile's trees record, or skip, each compiled graph on their own and the step runs to its end
    (CG701-CG704 name every graph), so there is no first failure to stop at; a step that calls code compiled
    without CUDA graphs is captured by cgtool (untraced) and gets the whole step like any other."""
    compiled_trees = report.compiled is not None and report.compiled.captured_by != "cgtool"
    if job.force_cpu or not job.settings.checks or compiled_trees:
        return False
    # a crash, not a timeout: a step that hangs while capturing would make the user wait for its CPU run as well
    died_capturing = report.status == WORKER_FAILED and any(e.phase == "capture" and e.type == "crash"
                                                            for e in report.errors)
    return (report.device == "cuda" and report.status == CAPTURE_FAILED) or died_capturing


def complete_report(job: Job, report: Report, timeout: float | None,
                    stop: threading.Event | None = None, world_of_one: bool = False) -> Report:
    """`report` with the whole step's findings added when its capture failed (unchanged otherwise); a CPU
    analysis that could not finish is named in `skipped`, the GPU's findings stay as they are. `world_of_one`:
    a script written for ranks (a world of one rank, or `--nproc-per-node N`); its CPU analysis runs as a world of
    one (as `--cpu` does)."""
    complete_reports(job, [report], timeout, stop, world_of_one)
    return report


def complete_reports(job: Job, reports: list[Report], timeout: float | None,
                     stop: threading.Event | None = None, world_of_one: bool = False) -> None:
    """complete_report for several reports of one script (the ranks of `capture --nproc-per-node N`): the CPU
    analysis of the whole step runs once, and joins each report whose capture failed, judged by that report's
    own failure. For N ranks it runs as rank 0 of a world of one: what only other ranks run is not in it."""
    failed = [r for r in reports if needs_whole_step(job, r)]
    if not failed:
        return
    cpu, why = _whole_step(job, timeout, stop, world_of_one)
    for report in failed:
        if cpu is None:
            report.skipped.append(Skip(WHOLE_STEP, why))
            continue
        failure = next((e for e in report.errors if e.phase == "capture" and e.user_frame is not None), None)
        report.findings = complete_with_whole_step(report.findings, cpu.findings, failure)


def _whole_step(job: Job, timeout: float | None, stop: threading.Event | None,
                world_of_one: bool) -> tuple[Report | None, str]:
    """The CPU analysis's report, or None and the sentence that says why it is missing."""
    cpu_job = replace(job, settings=replace(job.settings, timing=False), force_cpu=True, work_dir=None)
    if world_of_one:
        from cgtool.worker.distributed import lint_report

        cpu = lint_report(cpu_job, 1, timeout or 300.0, stop)
        failure = "interrupted" if cpu is None else None
    else:
        outcome = run_job(cpu_job, timeout, stop=stop)
        failure = outcome.failure
        cpu = report_from_outcome(cpu_job, outcome) if failure is None else None
    if failure is not None or cpu is None:
        return None, (f"the CPU analysis of the whole step ({failure}): findings after the failed capture's line "
                      "are not listed")
    if cpu.status != CPU_ONLY and not cpu.findings:
        return None, ("the CPU analysis of the whole step did not run through: findings after the failed capture's "
                      "line are not listed")
    return cpu, ""
