"""The bench job: per size, prepare (setup, warmup, capture once), then time eager and replay adaptively."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cgtool import __version__
from cgtool.bench.measure import kernel_floor_us, measure, prepare
from cgtool.bench.result import BenchReport, BenchResult
from cgtool.capture.harness import CaptureFailed
from cgtool.errors import CgtoolError, ExitCode
from cgtool.model.graph_memory import SharedPool
from cgtool.model.job import BenchSettings, Job
from cgtool.model.phase_log import PhaseLog
from cgtool.model.report import ErrorRecord
from cgtool.pipeline.environment import environment
from cgtool.pipeline.machine_cache import best_probe_us, remember_probe_us
from cgtool.script.contract import ScriptRaised, contract_names, load_script
from cgtool.script.errors import error_record, job_error


def bench_job(job: Job, progress: PhaseLog) -> BenchReport:
    settings = job.settings
    results, errors = [], []
    shared = None
    try:
        progress.phase("load", job.script)
        script = load_script(job.script, job.entry, *contract_names(job.settings))
        import torch

        if not torch.cuda.is_available():
            raise CgtoolError("cgtool bench needs a CUDA device; none is visible to torch here. "
                              "`cgtool capture` and `cgtool lint` still analyse the script on CPU.", ExitCode.ENVIRONMENT)
        torch.cuda.init()
        sizes: list[int | None] = list(settings.sizes or [None])
        if sizes != [None] and not script.accepts_size():
            raise CgtoolError(f"--sizes needs setup(device, size) or inputs(i, device, size) in {job.script}; "
                              "neither takes a `size` parameter.")
        # a sweep records each size's capture allocations: the plan's shared-pool model (bench/pool_model.py)
        for size in sizes:
            try:
                results.append(bench_one(script, size, settings, progress, trace_allocations=len(sizes) > 1))
            except ScriptRaised as exc:
                errors.append(error_record(exc.phase, exc.exc))
            except CaptureFailed as failed:
                errors.append(failed.record)
                break  # the CUDA context is unusable after a failed capture
        if len(results) > 1 and not errors:
            try:
                shared = shared_pool(script, results, settings, progress)
            except CaptureFailed as failed:  # e.g. out of memory with every size held at once
                errors.append(failed.record)
    except BaseException as exc:  # a real SIGINT ends the worker before Python sees it (worker/child.py)
        record = job_error(exc, progress.current)
        if record is None:  # cgtool's own failure: keep the sizes measured so far; the traceback goes to the output
            import traceback

            traceback.print_exc()
            record = ErrorRecord(progress.current or "load", type(exc).__name__, str(exc).strip()[:2000])
        errors.append(record)
    return BenchReport(tuple(results), settings.to_json(), tuple(errors), __version__,
                       shared_pool=shared)


def bench_one(script: Any, size: int | None, settings: BenchSettings, progress: PhaseLog,
              trace_allocations: bool = False):
    prep = prepare(script, size, settings, progress, trace_allocations)
    best = best_probe_us()
    rounds = measure(prep, settings, progress, size)
    floor = kernel_floor_us(prep.fns["replay"])
    result = BenchResult.from_rounds(rounds, script=script.path, entry=script.entry, size=size, gpu_floor_us=floor,
                                     capture_ms=prep.capture_ms, instantiate_ms=prep.instantiate_ms,
                                     pool_bytes=prep.pool_bytes, memory=prep.memory, environment=environment(), machine_best_us=best)
    if result.cpu_load is not None:
        remember_probe_us(result.cpu_load.probe_floor_us)
    return result


def shared_pool(script: Any, results: list[BenchResult], settings: BenchSettings, progress: PhaseLog) -> SharedPool:
    """Capture every size of the sweep again, largest first, into one private pool on one capture stream (vLLM's
    and SGLang's order: a smaller graph reuses the blocks the larger ones freed; the caching allocator reuses a
    free block only on the stream that allocated it), keeping every graph alive; read that pool."""
    import torch

    from cgtool.capture.harness import run_to_capture
    from cgtool.capture.memory import pool_memory
    from cgtool.script.session import ScriptSession

    sizes = sorted((r.size for r in results if r.size is not None), reverse=True)
    handle, stream = torch.cuda.graph_pool_handle(), torch.cuda.Stream()
    device = torch.device("cuda")
    # one model for every size, as in a server
    state = None if script.setup_takes_size() else ScriptSession(script, device).setup()
    kept, ms = [], 0.0
    for size in sizes:
        progress.phase("shared-pool", f"size={size}")
        captured = run_to_capture(ScriptSession(script, device, size, state), replace(settings, capture_mode="global"),
                                  progress, pool=handle, stream=stream)
        kept.append(captured)  # every graph stays alive, as in a server, so the pool holds all of them at once
        ms += captured.capture_ms
    reserved, allocated = pool_memory(handle)
    separate = sum(r.pool_bytes or 0 for r in results)
    del kept
    return SharedPool(tuple(sizes), reserved, allocated, ms, separate)
