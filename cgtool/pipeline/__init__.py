"""What the worker runs: the capture job (GPU pipeline or CPU analysis), the bench job, the partial-capture job."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cgtool.model.job import BENCH, CAPTURE, PARTIAL, Job
from cgtool.model.phase_log import PhaseLog

if TYPE_CHECKING:
    from cgtool.pipeline.result import JobResult


def preload() -> None:
    """Import torch before the script runs, so that what its import prints (a NumPy warning) comes before
    the script's own output; a missing torch is reported later, by the job."""
    try:
        import torch  # noqa: F401
    except Exception:  # ImportError, or a broken install raising anything: the job reports it
        pass


def run_job(job: Job, log: PhaseLog) -> JobResult:
    """Run `job` in this process; its result, tagged by the job's kind (pipeline/result.py)."""
    from cgtool.pipeline.result import JobResult

    if job.kind == BENCH:
        from cgtool.pipeline.bench_job import bench_job

        return JobResult(BENCH, bench=bench_job(job, log))
    if job.kind == PARTIAL:
        from cgtool.pipeline.partial_job import partial_job

        return partial_job(job, log)
    from cgtool.pipeline.capture_job import capture_job

    return JobResult(CAPTURE, report=capture_job(job, log))
