"""The capture job: load, warm up, capture, read the graph, check replay, time, collect findings → Report
(on a machine without a GPU, or with --cpu: the CPU analysis)."""

from __future__ import annotations

from typing import Any

from cgtool.errors import CgtoolError
from cgtool.model.job import Job
from cgtool.model.phase_log import PhaseLog
from cgtool.model.report import CAPTURE_FAILED, CAPTURED, CPU_ONLY, CPU_SKIPPED, SCRIPT_ERROR, ErrorRecord, Report
from cgtool.script.contract import Script, ScriptRaised, load_script
from cgtool.script.errors import error_record
from cgtool.script.frames import user_frames_of_traceback


def new_report(job: Job) -> Report:
    from cgtool import __version__

    return Report(script=job.script, entry=job.entry, settings=dict(job.settings),
                  cgtool_version=__version__)


def capture_job(job: Job, progress: PhaseLog) -> Report:
    """The whole capture pipeline; every failure ends up in the report, never as a lost result."""
    from cgtool.pipeline.environment import environment

    report = new_report(job)
    settings = report.settings
    try:
        progress.phase("load", report.script)
        script = load_script(report.script, report.entry)
        import torch

        report.environment = environment()
        from cgtool.pipeline.compiled_run import graphing_sites
        from cgtool.script.compile_sites import compile_sites

        sites = compile_sites(script.path)
        if graphing_sites(sites):  # torch.compile makes the CUDA graphs: observe them, capture nothing ourselves
            _run_compiled(script, settings, report, progress, job, sites)
        elif job.force_cpu or not torch.cuda.is_available():
            _run_on_cpu(script, settings, report, progress)
        else:
            _run_on_gpu(script, settings, report, progress, job.work_dir)
    except CgtoolError as exc:
        report.status = SCRIPT_ERROR
        report.errors.append(error_record("load", exc))
    except ScriptRaised as exc:
        report.status = SCRIPT_ERROR
        report.errors.append(error_record(exc.phase, exc.exc))
    except (SystemExit, KeyboardInterrupt) as exc:
        # the script called sys.exit() or raised KeyboardInterrupt itself (a real SIGINT ends the worker
        # before Python sees it, worker/child.py): its choice, reported as the script's error
        report.status = SCRIPT_ERROR
        report.errors.append(error_record(progress.current or "load", exc))
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


def _run_on_cpu(script: Script, settings: dict[str, Any], report: Report, progress: PhaseLog) -> None:
    """No CUDA device: prove the script runs (setup + warmup on CPU) and analyse what the CPU can see."""
    from cgtool.pipeline.cpu_analysis import analyze_on_cpu

    report.device = "cpu"
    _trace, findings, errors = analyze_on_cpu(script, warmup=settings["warmup"], progress=progress)
    report.findings.extend(findings)
    report.errors.extend(errors)
    report.status = SCRIPT_ERROR if errors else CPU_ONLY
    report.skipped.append(CPU_SKIPPED)


def _run_compiled(script: Script, settings: dict[str, Any], report: Report, progress: PhaseLog, job: Job,
                  sites: list) -> None:
    import torch

    if job.force_cpu or not torch.cuda.is_available():
        from cgtool.pipeline.compiled_cpu import run_compiled_on_cpu

        run_compiled_on_cpu(script, settings, report, progress, sites)
        return
    from cgtool.pipeline.compiled_run import run_compiled_pipeline

    report.device = "cuda"
    torch.cuda.init()
    run_compiled_pipeline(script, settings, report, progress, job.work_dir, sites)


def _run_on_gpu(script: Script, settings: dict[str, Any], report: Report, progress: PhaseLog,
                work_dir: str | None) -> None:
    import torch

    from cgtool.pipeline.gpu_run import run_gpu_pipeline

    report.device = "cuda"
    torch.cuda.init()
    run_gpu_pipeline(script, settings, report, progress, work_dir)
