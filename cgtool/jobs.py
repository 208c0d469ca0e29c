"""Jobs the worker process runs. Each takes a plain dict and returns JSON-ready data.

`capture`: load, warm up, capture, read the graph, check replay, time, collect findings → Report.
"""

from __future__ import annotations

from typing import Any

from cgtool.errors import CgtoolError
from cgtool.frames import user_frames_of_traceback
from cgtool.report import CAPTURE_FAILED, CAPTURED, CPU_ONLY, SCRIPT_ERROR, ErrorRecord, Report
from cgtool.script import Script, ScriptRaised, load_script
from cgtool.worker import Progress


def run_in_worker(job: dict[str, Any], progress: Progress) -> dict[str, Any]:
    kind = job["kind"]
    if kind == "capture":
        return capture_job(job, progress).to_json()
    if kind == "bench":
        from cgtool.bench.run import bench_job

        return bench_job(job, progress)
    raise ValueError(f"unknown job kind {kind!r}")


def new_report(job: dict[str, Any]) -> Report:
    from cgtool import __version__

    return Report(script=job["script"], entry=job["entry"], settings=dict(job.get("settings", {})),
                  cgtool_version=__version__)


def capture_job(job: dict[str, Any], progress: Progress) -> Report:
    """The whole capture pipeline; every failure ends up in the report, never as a lost result."""
    from cgtool.environment import environment

    report = new_report(job)
    settings = report.settings
    try:
        progress.phase("load", report.script)
        script = load_script(report.script, report.entry)
        import torch

        report.environment = environment()
        if job.get("force_cpu") or not torch.cuda.is_available():
            _run_on_cpu(script, settings, report, progress)
        else:
            _run_on_gpu(script, settings, report, progress, job.get("work_dir"))
    except CgtoolError as exc:
        report.status = SCRIPT_ERROR
        report.errors.append(ErrorRecord("load", "usage", exc.message))
    except ScriptRaised as exc:
        report.status = SCRIPT_ERROR
        report.errors.append(script_error(exc))
    except SystemExit as exc:  # the script called sys.exit(): its choice, reported as the script's error
        report.status = SCRIPT_ERROR
        report.errors.append(ErrorRecord(progress.current or "load", "SystemExit",
                                         f"the script called sys.exit({exc.code!r})",
                                         user_frames_of_traceback(exc.__traceback__)))
    except Exception as exc:  # anything else: keep what was learned so far (and the traceback in the output)
        import traceback

        traceback.print_exc()
        report.errors.append(ErrorRecord(progress.current or "load", type(exc).__name__, str(exc).strip()[:2000],
                                         user_frames_of_traceback(exc.__traceback__)))
        if report.status not in (CAPTURED, CAPTURE_FAILED):
            report.status = SCRIPT_ERROR
    if not report.environment:
        report.environment = environment()
    return report


def script_error(exc: ScriptRaised) -> ErrorRecord:
    return ErrorRecord.from_exception(exc.phase, exc.exc)


def _run_on_cpu(script: Script, settings: dict[str, Any], report: Report, progress: Progress) -> None:
    """No CUDA device: prove the script runs (setup + warmup on CPU) and analyse what the CPU can see."""
    from cgtool.analyze_cpu import analyze_on_cpu

    report.device = "cpu"
    progress.phase("warmup", f"{settings['warmup']} iterations on CPU")
    _trace, findings, errors = analyze_on_cpu(script, warmup=settings["warmup"])
    report.findings.extend(findings)
    report.errors.extend(errors)
    report.status = SCRIPT_ERROR if errors else CPU_ONLY
    report.skipped.append("capture, graph, replay check and timing need a CUDA device")


def _run_on_gpu(script: Script, settings: dict[str, Any], report: Report, progress: Progress,
                work_dir: str | None) -> None:
    import torch

    from cgtool.gpu_run import run_gpu_pipeline

    report.device = "cuda"
    torch.cuda.init()
    run_gpu_pipeline(script, settings, report, progress, work_dir)
