"""The compiled-step run on a CUDA device: a step that calls code compiled with CUDA graphs (mode
"reduce-overhead" / "max-autotune", options {"triton.cudagraphs": True}, backend "cudagraphs") runs as the
user runs it, with no capture of cgtool's own and no tracer (its modes would change what torch.compile does);
CUDAGraph Trees are watched instead (capture/trees.py), then timed three ways (pipeline/compiled_timing.py)."""

from __future__ import annotations

import os
from typing import Any

from cgtool.model.compiled import CompiledRun, CompileSite, describe_mode
from cgtool.model.compiled_logs import (
    events_from_errors,
    events_from_records,
    events_from_warnings,
    functions_from_tree,
)
from cgtool.model.frame import Frame
from cgtool.model.phase_log import PhaseLog
from cgtool.model.report import COMPILED, Report
from cgtool.script.contract import Args, Script, ScriptRaised
from cgtool.script.frames import user_frames_of_traceback

STEADY = 8  # iterations after warmup: recording happens on the 2nd call, re-records show within a few more
PROFILED = 3  # steady iterations under the profiler for the kernel split
MAX_FAILURES = 4  # consecutive step errors before the run stops


def graphing_sites(sites: list[CompileSite]) -> bool:
    return any(s.cudagraphs for s in sites)


def backend_is_inductor(sites: list[CompileSite]) -> bool:
    return any(s.cudagraphs and s.backend == "inductor" for s in sites)


def run_compiled_pipeline(script: Script, settings: dict[str, Any], report: Report, progress: PhaseLog,
                          work_dir: str | None, sites: list[CompileSite]) -> CompiledRun:
    import torch

    from cgtool.capture.tree_graphs import profile_steps, read_tree_graphs
    from cgtool.capture.trees import (
        TreesObserver,
        pool_bytes,
        symint_keys,
        tree_manager,
        tree_state,
    )
    from cgtool.checks.compiled import check_compiled

    device = torch.device("cuda")
    run = CompiledRun(mode=describe_mode(sites), sites=list(sites), observed=True)
    report.compiled = run
    warm, steady = int(settings.get("warmup", 3)), int(settings.get("compiled_steady", STEADY))
    errors: list[tuple[str, Frame | None]] = []
    with TreesObserver() as obs:
        progress.phase("setup", "the compiled step runs as written: no capture of cgtool's own, no tracer")
        state = _call("setup", lambda: script.call_setup(device))
        progress.phase("warmup", f"{warm} + {steady} iterations of the compiled step")
        i = _iterate(script, state, device, obs, range(warm + steady), errors)
        run.iterations = i
        if len(errors) < i:
            progress.phase("profile", f"{PROFILED} steady iterations under the profiler")
            inputs = {k: script.call_inputs(k, device) for k in range(i, i + PROFILED)}
            try:
                prof = profile_steps(lambda k: script.call_step(state, inputs[k]), i, PROFILED)
            except Exception as exc:
                errors.append((str(exc), _user_frame(exc)))
                run.notes.append(f"kernel split skipped: the step raised while profiled ({type(exc).__name__})")
            else:
                s = prof["split"]
                run.kernels_in_graphs, run.kernels_outside = s.kernels_in_graphs, s.kernels_outside
                run.us_in_graphs, run.us_outside = round(s.us_in_graphs, 2), round(s.us_outside, 2)
                run.triton_kernels = prof["triton_per_step"]
                if not run.triton_kernels and backend_is_inductor(sites):
                    run.notes.append("no Triton kernel ran in the steady step: the compiled code may not have run "
                                     "(torch.compile disabled, or only library kernels such as cuBLAS)")
        mgr = tree_manager()
        tree, keys = tree_state(mgr), symint_keys(obs.closures)
        if obs.keep_graph_ok is False:
            run.notes.append("the trees' graphs could not be kept (keep_graph swap refused): no node counts")
    run.functions = functions_from_tree(tree, keys)
    run.events = (events_from_records(obs.records) + events_from_warnings(obs.warnings)
                  + events_from_errors(errors))
    if mgr is None:
        run.notes.append("torch.compile made no CUDAGraph tree: every compiled graph ran without CUDA graphs")
    run.pool_bytes = pool_bytes(mgr)
    progress.phase("read-graph", "the trees' CUDA graphs through cuda-bindings")
    run.graphs, _models = read_tree_graphs(mgr, work_dir)
    for g in run.graphs:
        if g.dot and work_dir:  # copied into the output folder by render/outputs.py
            report.outputs[g.dot] = os.path.join(work_dir, g.dot)
    report.status = COMPILED
    if settings.get("timing", True):
        from cgtool.pipeline.compiled_timing import time_three_ways

        progress.phase("timing", "eager, torch.compile without CUDA graphs, as compiled")
        time_three_ways(script, state, run, float(settings.get("timing_budget_s", 3.0)))
    report.findings.extend(check_compiled(run, script.path))
    report.skipped.append("cgtool's own capture, replay check and tracer checks: the step is compiled with CUDA "
                          "graphs, so torch.compile's CUDAGraph Trees were observed instead")
    return run


def _call(phase: str, fn: Any) -> Any:
    try:
        return fn()
    except Exception as exc:
        raise ScriptRaised(phase, exc) from None


def _iterate(script: Script, state: Args, device: Any, obs: Any, iterations: range,
             errors: list[tuple[str, Frame | None]]) -> int:
    """Run the step as a training loop would (the previous output kept alive); torch's errors about overwritten
    outputs are kept, not raised. Returns the number of iterations run."""
    import torch

    out, failures, n = None, 0, 0
    for i in iterations:
        obs.iteration = i
        inputs = _call("inputs", lambda i=i: script.call_inputs(i, device))
        try:
            out = script.call_step(state, inputs)
            torch.cuda.synchronize()
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
