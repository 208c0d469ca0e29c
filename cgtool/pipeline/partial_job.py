"""The partial-capture job (`capture --piecewise / --modules DEPTH`, `bench --piecewise / --modules`), run in its
own worker after the capture job: a failed whole-step capture can leave the CUDA context unusable, and
torch.compile's state stays out of the capture job. On a machine without a GPU (or --cpu): what the CPU
analysis shows (the split points, the module map by error findings)."""

from __future__ import annotations

from typing import Any

from cgtool.model.job import PARTIAL, Job, PartialSettings
from cgtool.model.partial import FAILED, ModuleMap, Piecewise
from cgtool.model.phase_log import PhaseLog
from cgtool.model.report import ErrorRecord
from cgtool.pipeline.piecewise_job import METHOD, RerunFresh
from cgtool.pipeline.result import JobResult, PartialResult
from cgtool.script.contract import ScriptRaised, contract_names, load_script
from cgtool.script.errors import error_record, first_line, job_error
from cgtool.script.frames import user_frames_of_traceback


def partial_job(job: Job, progress: PhaseLog) -> JobResult:
    """The pieced step and/or the module map with the errors met, and rerun_piecewise (why) when the piecewise
    run that kept its graphs failed and should run again in a fresh worker with keep_graphs=False, and
    modules_pending when both parts were asked for on a GPU: this worker runs the pieced step only, the module
    map runs in a fresh worker (worker/service.py: run_partial_jobs does both)."""
    settings = job.settings
    depth = settings.modules
    piecewise: Piecewise | None = None
    modules: ModuleMap | None = None
    errors: list[ErrorRecord] = []
    rerun = ""
    pending = False
    try:
        progress.phase("load", job.script)
        script = load_script(job.script, job.entry, *contract_names(job.settings))
        import torch

        if job.force_cpu or not torch.cuda.is_available():
            piecewise, modules, errors = _on_cpu(script, settings, depth)
        else:
            torch.cuda.init()
            if settings.piecewise:
                try:
                    piecewise = _attempt(lambda: _gpu_piecewise(script, settings, progress), errors, "piecewise")
                except RerunFresh as exc:
                    rerun = str(exc)
                    piecewise = Piecewise(FAILED, METHOD, note=rerun)
                if piecewise is None:
                    piecewise = Piecewise(FAILED, "", error=errors[-1])
            if depth is not None and settings.piecewise:
                pending = True  # the module map runs in a worker of its own, after this one
            elif depth is not None:
                modules = _attempt(lambda: _gpu_modules(script, settings, progress), errors, "modules")
                if modules is None:
                    modules = ModuleMap(FAILED, int(depth), error=errors[-1])
    except BaseException as exc:  # a real SIGINT ends the worker before Python sees it (worker/child.py)
        record = job_error(exc, progress.current)
        if record is None:
            raise  # cgtool's own failure: the worker's output shows its traceback
        errors.append(record)
    return JobResult(PARTIAL, partial=PartialResult(piecewise, modules, errors), rerun_piecewise=rerun,
                     modules_pending=pending)


def _on_cpu(script: Any, settings: PartialSettings, depth: Any):
    from cgtool.pipeline.piecewise_job import cpu_split_points

    warm = settings.warmup
    modules = None
    if depth is not None:
        from cgtool.pipeline.module_map import cpu_module_map

        modules, findings, errors = cpu_module_map(script, int(depth), warm)
    else:
        from cgtool.pipeline.cpu_analysis import analyze_on_cpu

        _trace, findings, errors = analyze_on_cpu(script, warmup=warm)
    piecewise = cpu_split_points(findings) if settings.piecewise else None
    return piecewise, modules, list(errors)


def _gpu_piecewise(script: Any, settings: PartialSettings, progress: PhaseLog) -> Piecewise:
    from cgtool.pipeline.piecewise_job import run_piecewise

    return run_piecewise(script, settings, progress)


def _gpu_modules(script: Any, settings: PartialSettings, progress: PhaseLog) -> ModuleMap:
    from cgtool.pipeline.modules_job import run_modules

    return run_modules(script, settings, progress)


def _attempt(fn: Any, errors: list[ErrorRecord], what: str) -> Any:
    """Run one part; its failure becomes an error record (phase `piecewise` or `modules`), never a lost result."""
    try:
        return fn()
    except RerunFresh:
        raise
    except ScriptRaised as exc:
        errors.append(error_record(exc.phase, exc.exc))
    except Exception as exc:  # torch.compile or a capture failing: keep the other part, print the traceback
        import traceback

        traceback.print_exc()
        errors.append(ErrorRecord(what, type(exc).__name__, first_line(str(exc))[:500] or type(exc).__name__,
                                  user_frames_of_traceback(exc.__traceback__)))
    return None
