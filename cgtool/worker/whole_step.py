"""Every hazard in one run: a capture that failed on the GPU stopped at its first failure, so the rest of the
step was never traced during capture. The CPU analysis of the whole step (the CUDA stand-ins, in a second
worker) finds what comes after; its findings join the GPU's, marked not-reached (docs/checks.md)."""

from __future__ import annotations

import threading

from cgtool.checks.verdict import complete_with_whole_step
from cgtool.model.job import Job
from cgtool.model.report import CAPTURE_FAILED, CPU_ONLY, Report
from cgtool.worker.client import report_from_outcome, run_job


def needs_whole_step(job: Job, report: Report) -> bool:
    """A GPU run whose capture failed, with the checks on."""
    return (report.device == "cuda" and report.status == CAPTURE_FAILED and not job.force_cpu
            and job.settings.get("checks", True) and report.compiled is None)


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
    failure = next((e for e in report.errors if e.phase == "capture"), None)
    report.findings = complete_with_whole_step(report.findings, cpu.findings, failure)
    return report
