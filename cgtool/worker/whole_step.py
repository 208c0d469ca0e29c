"""Every hazard in one run: a capture that failed on the GPU stopped at its first failure, so the rest of the
step was never traced during capture. The CPU analysis of the whole step (the CUDA stand-ins, in a second
worker) finds what comes after; its findings join the GPU's, marked not-reached (docs/checks.md)."""

from __future__ import annotations

import threading

from cgtool.checks.verdict import complete_with_whole_step
from cgtool.model.job import Job
from cgtool.model.report import CAPTURE_FAILED, CPU_ONLY, WORKER_FAILED, Report
from cgtool.worker.client import report_from_outcome, run_job


def needs_whole_step(job: Job, report: Report) -> bool:
    """A GPU run whose capture failed, or whose worker died while capturing (a poisoned context that took the
    process down: no report came back), with the checks on."""
    if job.force_cpu or not job.settings.get("checks", True) or report.compiled is not None:
        return False
    # a crash, not a timeout: a step that hangs while capturing would make the user wait for its CPU run as well
    died_capturing = report.status == WORKER_FAILED and any(e.phase == "capture" and e.type == "crash"
                                                            for e in report.errors)
    return (report.device == "cuda" and report.status == CAPTURE_FAILED) or died_capturing


def complete_report(job: Job, report: Report, timeout: float | None,
                    stop: threading.Event | None = None) -> Report:
    """`report` with the whole step's findings added when its capture failed (unchanged otherwise); a CPU
    analysis that could not finish is named in `skipped`, the GPU's findings stay as they are."""
    if not needs_whole_step(job, report):
        return report
    cpu_job = Job(job.kind, job.script, job.entry, {**job.settings, "timing": False}, force_cpu=True)
    outcome = run_job(cpu_job, timeout, stop=stop)
    if outcome.failure is not None:
        report.skipped.append(f"the CPU analysis of the whole step ({outcome.failure}): findings after the failed "
                              "capture's line are not listed")
        return report
    cpu = report_from_outcome(cpu_job, outcome)
    if cpu.status != CPU_ONLY and not cpu.findings:
        report.skipped.append("the CPU analysis of the whole step did not run through: findings after the failed "
                              "capture's line are not listed")
        return report
    failure = next((e for e in report.errors if e.phase == "capture" and e.user_frame is not None), None)
    report.findings = complete_with_whole_step(report.findings, cpu.findings, failure)
    return report
