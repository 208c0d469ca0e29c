"""The compiled-step run on a CUDA device. Compiled code is found while the script runs (trace/compile_watch.py),
wherever it was compiled. Code compiled with CUDA graphs (mode "reduce-overhead" / "max-autotune", options
{"triton.cudagraphs": True}, backend "cudagraphs") runs as the user runs it, with no capture of cgtool's own and
no tracer (dynamo runs nothing compiled under a dispatch mode); CUDAGraph Trees are watched instead
(capture/trees.py), then timed three ways (pipeline/compiled_timing.py). Code compiled without CUDA graphs is
captured by cgtool, untraced, so that the graph holds the compiled kernels (pipeline/compiled_capture.py)."""

from __future__ import annotations

import os
from typing import Any

from cgtool.model.job import CaptureSettings
from cgtool.model.compiled import CompiledRun, describe_mode
from cgtool.model.compiled_logs import (
    breaks_from_records,
    events_from_errors,
    events_from_records,
    events_from_warnings,
    functions_from_tree,
    recompile_events,
)
from cgtool.model.frame import Frame
from cgtool.model.phase_log import PhaseLog
from cgtool.model.report import COMPILED, Report
from cgtool.model.report_parts import RULES_NOT_CHECKED, Skip
from cgtool.script.contract import Args, Script, ScriptRaised
from cgtool.script.frames import user_frames_of_traceback
from cgtool.script.session import ScriptSession

PROFILED = 3  # steady iterations under the profiler for the kernel split
MAX_FAILURES = 4  # consecutive step errors before the run stops


class StepCompiled(Exception):
    """The step turned out to call compiled code (after setup, or during warmup): run it as compiled instead."""

    def __init__(self, state: Args, phase: str) -> None:
        super().__init__(f"compiled code found after {phase}")
        self.state, self.phase = state, phase


def run_compiled_pipeline(script: Script, settings: CaptureSettings, report: Report, progress: PhaseLog,
                          work_dir: str | None, watch: Any, state: Args | None = None) -> CompiledRun:
    """`watch`: the CompileWatch that saw the compile calls (still on); `state`: setup's state when made."""
    if not watch.graphing:
        from cgtool.pipeline.compiled_capture import capture_compiled

        return capture_compiled(script, settings, report, progress, work_dir, watch, state)
    return _observe_trees(script, settings, report, progress, work_dir, watch, state)


def _observe_trees(script: Script, settings: CaptureSettings, report: Report, progress: PhaseLog,
                   work_dir: str | None, watch: Any, state: Args | None) -> CompiledRun:
    import torch

    from cgtool.capture.tree_graphs import profile_steps, read_tree_graphs
    from cgtool.capture.trees import (
        TreesObserver,
        pool_memory_of,
        symint_keys,
        tree_manager,
        tree_state,
    )
    from cgtool.checks.compiled import check_compiled

    device = torch.device("cuda")
    run = CompiledRun(mode=describe_mode(watch.sites), sites=list(watch.sites), observed=True)
    report.compiled = run
    warm, steady = settings.warmup, settings.compiled_steady
    errors: list[tuple[str, Frame | None]] = []
    start = len(watch.records)
    from cgtool.pipeline.compiled_capture import dynamo_graphs, dynamo_graphs_since

    before = dynamo_graphs()
    session = ScriptSession(script, device, state=state)
    with TreesObserver(call_frame=watch.call_frame) as obs:
        if state is None:
            progress.phase("setup", "the compiled step runs as written: no capture of cgtool's own, no tracer")
        session.setup()
        watch.phase = "step"
        progress.phase("warmup", f"{warm} + {steady} iterations of the compiled step")
        times: list[float] = []
        i = _iterate(session, obs, range(warm + steady), errors, times, watch)
        run.iterations = i
        run.first_steady_s = first_steady(times)
        if len(errors) < i:
            progress.phase("profile", f"{PROFILED} steady iterations under the profiler")
            inputs = {k: session.inputs(k) for k in range(i, i + PROFILED)}
            try:
                prof = profile_steps(lambda k: session.call(inputs[k]), i, PROFILED)
            except Exception as exc:
                errors.append((str(exc), _user_frame(exc)))
                run.notes.append(f"kernel split skipped: the step raised while profiled ({type(exc).__name__})")
            else:
                s = prof["split"]
                run.kernels_in_graphs, run.kernels_outside = s.kernels_in_graphs, s.kernels_outside
                run.us_in_graphs, run.us_outside = round(s.us_in_graphs, 2), round(s.us_outside, 2)
                run.triton_kernels = prof["triton_per_step"]
                if not run.triton_kernels and any(s.cudagraphs and s.backend == "inductor" for s in watch.sites):
                    run.notes.append("no Triton kernel ran in the steady step: the compiled code may not have run "
                                     "(torch.compile disabled, or only library kernels such as cuBLAS)")
        mgr = tree_manager()
        tree, keys = tree_state(mgr), symint_keys(obs.closures)
        if obs.keep_graph_ok is False:
            run.notes.append("the trees' graphs could not be kept (keep_graph swap refused): no node counts")
    run.functions = functions_from_tree(tree, keys)
    run.events = (events_from_records(obs.records) + events_from_warnings(obs.warnings)
                  + events_from_errors(errors) + recompile_events(watch.records[start:]))
    run.breaks = breaks_from_records(watch.records)
    run.dynamo_graphs = dynamo_graphs_since(before)
    run.sites = list(watch.sites)  # compile calls made during the step too
    if mgr is None:
        run.notes.append("torch.compile made no CUDAGraph tree: every compiled graph ran without CUDA graphs")
    run.pool_bytes, run.pool_allocated_bytes = pool_memory_of(mgr) or (None, None)
    progress.phase("read-graph", "the trees' CUDA graphs through cuda-bindings")
    run.graphs, _models = read_tree_graphs(mgr, work_dir)
    for g in run.graphs:
        if g.dot and work_dir:  # copied into the output folder by render/outputs.py
            report.outputs[g.dot] = os.path.join(work_dir, g.dot)
    report.status = COMPILED
    if settings.timing:
        from cgtool.pipeline.compiled_timing import time_three_ways

        progress.phase("timing", "eager, torch.compile without CUDA graphs, as compiled")
        time_three_ways(session, run, settings.timing_budget_s)
    report.findings.extend(check_compiled(run, script.path))
    report.skipped.append(Skip(RULES_NOT_CHECKED, (
            "cgtool's own capture, replay check and tracer checks: the step is compiled with CUDA graphs, so "
            "torch.compile's CUDAGraph Trees were observed instead")))
    return run


def first_steady(times: list[float]) -> float | None:
    """Seconds from the first call of the step to the end of the first call as fast as the steady state (within
    1.5× the median of the last four): compile, autotuning and recording are the user's cost, said once."""
    import statistics

    if len(times) < 5:
        return None
    steady = statistics.median(times[-4:])
    for n, t in enumerate(times):
        if t <= 1.5 * steady:
            return round(sum(times[:n + 1]), 3)
    return round(sum(times), 3)


def _iterate(session: ScriptSession, obs: Any, iterations: range,
             errors: list[tuple[str, Frame | None]], times: list[float] | None = None, watch: Any = None) -> int:
    """Run the step as a training loop would (the previous output kept alive); torch's errors about overwritten
    outputs are kept, not raised. Returns the number of iterations run; `times` gets each call's wall time."""
    import time

    import torch

    out, failures, n = None, 0, 0
    for i in iterations:
        obs.iteration = i
        if watch is not None:
            watch.iteration = i
        inputs = session.inputs(i)
        t0 = time.perf_counter()
        try:
            out = session.call(inputs)
            torch.cuda.synchronize()
            if times is not None:
                times.append(time.perf_counter() - t0)
            failures = 0
        except Exception as exc:
            if "CUDAGraphs" not in str(exc):
                raise ScriptRaised("warmup", exc) from None
            errors.append((str(exc), _user_frame(exc)))
            failures += 1
        n += 1
        if failures >= MAX_FAILURES:
            break
    del out
    return n


def _user_frame(exc: BaseException) -> Frame | None:
    frames = user_frames_of_traceback(exc.__traceback__)
    return frames[-1] if frames else None
