"""The capture job: load, warm up, capture, read the graph, check replay, time, collect findings → Report
(on a machine without a GPU, or with --cpu: the CPU analysis)."""

from __future__ import annotations

from typing import Any

from cgtool.model.job import CaptureSettings, Job
from cgtool.model.phase_log import PhaseLog
from cgtool.model.report import CAPTURE_FAILED, CAPTURED, CPU_ONLY, CPU_SKIPPED, SCRIPT_ERROR, ErrorRecord, Report
from cgtool.model.report_parts import HIGHER_ORDER_OP, TRACER_STOPPED, Skip
from cgtool.script.contract import Script, contract_names, load_script
from cgtool.script.errors import job_error
from cgtool.script.frames import user_frames_of_traceback


def new_report(job: Job) -> Report:
    from cgtool import __version__

    return Report(script=job.script, entry=job.entry, settings=job.settings.to_json(),
                  cgtool_version=__version__)


def capture_job(job: Job, progress: PhaseLog) -> Report:
    """The whole capture pipeline; every failure ends up in the report, never as a lost result."""
    from cgtool.pipeline.environment import environment

    report = new_report(job)
    settings: CaptureSettings = job.settings
    try:
        import torch

        from cgtool.trace.compile_watch import CompileWatch

        on_gpu = torch.cuda.is_available() and not job.force_cpu
        # every compile call, wherever it is (the script, an imported module, a library), as it runs; on the
        # CPU compiled code is built with dynamo's "eager" backend: graph breaks without inductor
        with CompileWatch(backend=None if on_gpu else "eager") as watch:
            progress.phase("load", report.script)
            script = load_script(report.script, report.entry, *contract_names(job.settings))
            report.environment = environment()
            watch.phase = "setup"
            if not on_gpu:
                _run_on_cpu(script, settings, report, progress, watch)
            elif watch.sites:  # compiled at import time: run as torch.compile runs it
                _run_compiled(script, settings, report, progress, job, watch, None)
            else:
                _run_on_gpu_or_compiled(script, settings, report, progress, job, watch)
    except BaseException as exc:  # a real SIGINT ends the worker before Python sees it (worker/child.py)
        record = job_error(exc, progress.current)
        if record is None:  # cgtool's own failure: keep what was learned so far (and the traceback in the output)
            import traceback

            traceback.print_exc()
            record = ErrorRecord(progress.current or "load", type(exc).__name__, str(exc).strip()[:2000],
                                 user_frames_of_traceback(exc.__traceback__))
            if report.status not in (CAPTURED, CAPTURE_FAILED):
                report.status = SCRIPT_ERROR
        else:
            report.status = SCRIPT_ERROR
        report.errors.append(record)
    if not report.environment:
        report.environment = environment()
    return report


def _run_on_cpu(script: Script, settings: CaptureSettings, report: Report, progress: PhaseLog, watch: Any) -> None:
    """No CUDA device: prove the script runs (setup + warmup on CPU) and analyse what the CPU can see; where the
    step calls compiled code, also what dynamo does with it on the CPU (graph breaks)."""
    from cgtool.pipeline.cpu_analysis import analyze_on_cpu

    from cgtool.trace.compile_watch import dynamo_off

    report.device = "cpu"
    with dynamo_off():  # the tracer sees the ops of compiled functions, run eagerly
        trace, findings, errors = analyze_on_cpu(script, warmup=settings.warmup, progress=progress)
    if trace.tracer_error is not None:  # never a silent "no hazard found" from a trace that stopped early
        report.skipped.append(Skip(TRACER_STOPPED, (
                f"part of the CPU analysis: its tracer stopped recording ({trace.tracer_error}); findings after that "
                "point are missing (a cgtool bug: please report it)")))
    if watch.sites:  # compiled code: torch.cond and friends run in dynamo's graphs, not through the tracer
        hop = [e for e in errors if "HigherOrderOperator" in e.message]
        errors = [e for e in errors if e not in hop]
        for e in hop:
            where = f" at {e.frames[-1].file}:{e.frames[-1].line}" if e.frames else ""
            report.skipped.append(Skip(HIGHER_ORDER_OP, (
                    f"the CPU analysis stopped{where}: its tracer cannot run a higher-order operator (torch.cond, ...) "
                    "eagerly; the dynamo run below checks the compiled code")))
    report.findings.extend(findings)
    report.errors.extend(errors)
    report.status = SCRIPT_ERROR if errors else CPU_ONLY
    report.skipped.append(CPU_SKIPPED)
    if watch.sites:
        from cgtool.pipeline.compiled_cpu import run_compiled_on_cpu

        run_compiled_on_cpu(script, settings, report, progress, watch)


def _run_on_gpu_or_compiled(script: Script, settings: CaptureSettings, report: Report, progress: PhaseLog, job: Job,
                            watch: Any) -> None:
    """cgtool's own capture; a step that turns out to call compiled code (compiled in setup, or on its first
    call) goes to the compiled run, with the state setup made."""
    import torch

    from cgtool.pipeline.compiled_run import StepCompiled
    from cgtool.pipeline.gpu_run import run_gpu_pipeline

    def on_state(state: Any, phase: str) -> None:
        watch.phase = "step"
        if watch.sites:
            raise StepCompiled(state, phase)

    report.device = "cuda"
    torch.cuda.init()
    try:
        run_gpu_pipeline(script, settings, report, progress, job.work_dir, on_state=on_state)
    except StepCompiled as found:
        report.findings.clear()  # what the tracer said of the uncompiled code is not what runs
        _run_compiled(script, settings, report, progress, job, watch, found.state,
                      f"compiled code found after {found.phase}: the step runs as torch.compile runs it")


def _run_compiled(script: Script, settings: CaptureSettings, report: Report, progress: PhaseLog, job: Job,
                  watch: Any, state: Any, note: str = "") -> None:
    import torch

    from cgtool.pipeline.compiled_run import run_compiled_pipeline

    report.device = "cuda"
    torch.cuda.init()
    run = run_compiled_pipeline(script, settings, report, progress, job.work_dir, watch, state)
    if note:
        run.notes.insert(0, note)
