"""--piecewise: the step captured in pieces at its break points (GPU), or its split points from the CPU analysis."""

from __future__ import annotations

from typing import Any, Callable

from cgtool.model.job import MeasureSettings, PartialSettings
from cgtool.bench.measure import Prepared, measure
from cgtool.bench.result import BenchResult
from cgtool.model.finding import Finding
from cgtool.model.frame import Frame
from cgtool.model.partial import CPU_ONLY, MEASURED, NOT_POSSIBLE, Piece, Piecewise, SplitPoint
from cgtool.model.phase_log import PhaseLog
from cgtool.model.report import Timings
from cgtool.script.contract import Script, ScriptRaised
from cgtool.script.errors import first_line

METHOD = ('torch.compile(step, backend="cudagraphs"): dynamo splits the step at its graph breaks and each piece '
          "(forward and backward) is recorded as a CUDA graph of the eager kernels (cudagraph trees); the rest runs "
          "eagerly between them")
# Error findings of these categories are where dynamo breaks the step: a host read of a GPU value, a Python
# branch on one, an output size that depends on the data.
SPLITTING = ("sync", "control-flow", "dynamic-shape")


def cpu_split_points(findings: list[Finding]) -> Piecewise:
    """What the CPU shows: the lines of the error findings where a pieced step would be split."""
    splits = [SplitPoint(f.message, Frame(f.file, f.line or 0, f.function or "", f.source or ""), f.rule)
              for f in findings if f.severity == "error" and f.category in SPLITTING and f.file]
    return Piecewise(CPU_ONLY, METHOD, tuple(splits), note=(
        "split points predicted from the CPU analysis's error findings; the pieces, their kernels, replay and "
        "speedup need a CUDA device"))


# Anything the compiled step raises is torch refusing or failing the step in pieces (seen on torch 2.11: "Mutations
# on inputs with user-specified streams are not yet supported", "accessing tensor output of CUDAGraphs that has
# been overwritten", a piece recorded for one data-dependent size replayed for another): `not-possible` with
# torch's reason. Failures that kept graphs might cause (the allocator's pool checkpoint) get one run without.
KEEP_SUSPECTS = ("curr_block->size == block_state.size",)


class RerunFresh(Exception):
    """The run that kept the pieces' graphs failed in a way a run without them may not: run the piecewise job
    again in a fresh worker with settings keep_graphs=False. Not in this process: a failed run can leave torch's
    caching allocator broken for it (on the H100 the next setup() then failed an allocator INTERNAL ASSERT)."""


def run_piecewise(script: Script, settings: PartialSettings, progress: PhaseLog) -> Piecewise:
    """The pieced step, its graphs kept for reading (settings keep_graphs, default true). What the compiled step
    raises (the eager one did not) is torch.compile failing on this step: `not-possible` with torch's reason
    and when it raised. A failure that kept graphs may have caused (KEEP_SUSPECTS), or any failure of cgtool's
    own code while graphs were kept, raises RerunFresh (the caller runs it again, without keeping them, in a new
    process); without kept graphs it propagates (FAILED with the error), as do the script's own errors."""
    from cgtool.capture.pieces import PiecedStepFailed

    keep = settings.keep_graphs
    try:
        return _run_piecewise(script, settings, progress, keep=keep)
    except PiecedStepFailed as exc:
        first: BaseException = exc.exc
        if not (keep and any(r in str(first) for r in KEEP_SUSPECTS)):
            _print(first)
            return _not_possible(first, exc.phase)
    except ScriptRaised:
        raise  # the script's own code (setup, inputs, the eager step) raised: its error
    except Exception as exc:  # noqa: BLE001 - cgtool's own code around the step (the profile, reading graphs)
        if not keep:
            raise
        first = exc
    _print(first)
    raise RerunFresh(f"the run that kept the pieces' graphs failed ({type(first).__name__}: "
                     f"{first_line(str(first))[:200]}); rerun in a fresh process without keeping them")


def _print(exc: BaseException) -> None:
    import traceback

    traceback.print_exception(type(exc), exc, exc.__traceback__)


def _not_possible(exc: BaseException, when: str = "") -> Piecewise:
    """torch refused the step in pieces, or the compiled step failed: its reason and where, nothing measured."""
    from cgtool.script.frames import user_frames_of_traceback

    reason = first_line(str(exc))[:400] or type(exc).__name__
    frames = user_frames_of_traceback(exc.__traceback__)
    at = f" at line {frames[-1].line} (`{frames[-1].source.split('  #', 1)[0].strip()}`)" if frames else ""
    how = f' (torch.compile(step, backend="cudagraphs") raised {type(exc).__name__} {when}{at})' if when else ""
    return Piecewise(NOT_POSSIBLE, METHOD, note=f"piecewise not possible: {reason}{how}")


def _run_piecewise(script: Script, settings: PartialSettings, progress: PhaseLog, keep: bool) -> Piecewise:
    """Compile and record the pieces, profile the step's kernels, check replay, time eager vs pieced, and only
    then read the kept graphs (a failure to read them leaves the pieces without graphs, never fails the run).
    A pieced step in which no piece runs as a CUDA graph once it has settled is `not-possible`, with why."""
    import torch

    from cgtool.capture.compare_runs import compare_steps, inputs_label
    from cgtool.capture.pieces import prepare_pieced

    step = prepare_pieced(script, settings, progress, settings.size, keep=keep)
    if step.dynamo_graphs == 0 and step.made == 0:  # dynamo ran the whole step eagerly: nothing to piece
        reasons = "; ".join(first_line(sp.reason)[:400] for sp in step.splits[:3]) or "no graph break was recorded"
        return Piecewise(NOT_POSSIBLE, METHOD, tuple(step.splits), note=(
            "piecewise not possible: torch.compile made no graph of this step (dynamo ran it eagerly: "
            f"{reasons})"))
    progress.phase("profile", "kernels in graphs and outside")
    step.now = "in the profiled steps"
    split = profile_split(step.run_pieced, steps=PROFILED_STEPS)
    settle = "" if split.settled else (
        f"the pieced step had not settled while profiled (kernels in graphs/outside per step: "
        f"{', '.join(f'{a}/{b}' for a, b in split.per_step)}; the last step is reported)")
    recompiled = step.graphs_compiled() - step.dynamo_graphs
    if recompiled > 0:
        settle = "; ".join(x for x in (settle, (
            f"dynamo compiled {recompiled} more graph(s) after recording: guards on values that change from step "
            "to step (a Python number read from a tensor) make it recompile, up to its recompile limit, after "
            "which it runs those pieces eagerly")) if x)
    if split.kernels_in_graphs == 0:
        why = "; ".join(dict.fromkeys(step.skips)) or settle or "the backend left every piece eager"
        return Piecewise(NOT_POSSIBLE, METHOD, tuple(step.splits), (), 0, split.kernels_outside, 0.0, split.us_outside,
                         tuple(split.outside[:10]), tuple(step.skips), note=(
                             f"piecewise not possible: no piece of the step runs as a CUDA graph once it has settled "
                             f"({why})"))
    replay = None
    eager_noise: list[Any] = []  # what eager twice varied by at each step: the recheck's noise too
    if settings.replay_check:
        progress.phase("replay-check", "pieced step vs eager")
        index, steps = settings.warmup + 1, settings.check_steps
        fresh = step.eager.inputs_from(index, steps)
        label = inputs_label(script, index, steps)
        step.now = f"on {label} (the replay check)"
        replay = compare_steps(step.state, step.run_eager, step.run_pieced, fresh, step.stream, label,
                               what="pieced step", noise_seen=eager_noise)
    timings = None
    if settings.timing:
        progress.phase("timing", "eager vs pieced")
        step.now = "while timed"
        prep = Prepared({"eager": step.run_eager, "replay": step.run_pieced}, step.stream, step.compile_ms, 0.0, 0)
        timings = time_prepared(prep, script, settings, "the pieced step", step.state)
    if replay is not None and replay.status == "mismatch":  # torch.compile's own, or the graphs'? After timing:
        from cgtool.capture.pieced_check import recheck_against_compiled  # its dynamo entries must not affect it

        progress.phase("replay-check", "pieced step vs the same step compiled without CUDA graphs")
        replay = recheck_against_compiled(step, fresh, label, replay, eager_noise)
    torch.cuda.synchronize()
    graphs, read_error = read_pieces(step.kept) if keep else ([], "not kept")
    pieces = tuple(Piece(i + 1, k, us, _pair(graphs, i, k)) for i, (k, us) in enumerate(split.launches))
    if any(p.graph for p in pieces):
        how = "pieces read through cuda-bindings"
    elif not keep:
        how = "the pieces' graphs were not kept (counts come from the profiler)"
    else:
        how = f"the pieces' graphs could not be read: {read_error or 'none matched a launch'} (counts come from the profiler)"
    note = "; ".join(x for x in (
        f"{step.dynamo_graphs} dynamo graph(s), {step.made} CUDA graph(s) made, {len(step.kept)} kept", how, settle) if x)
    from cgtool.capture.trees import pool_memory_of, tree_manager

    pool, used = pool_memory_of(tree_manager()) or (None, None)  # one trees pool holds every piece
    return Piecewise(MEASURED, METHOD, tuple(step.splits), pieces, split.kernels_in_graphs, split.kernels_outside,
                     split.us_in_graphs, split.us_outside, tuple(split.outside[:10]), tuple(step.skips), replay,
                     timings, note=note, pool_bytes=pool, pool_allocated_bytes=used)


PROFILED_STEPS = 4  # the last one is reported: the steady state


def profile_split(fn: Callable[[], Any], steps: int = PROFILED_STEPS) -> Any:
    """torch.profiler over `steps` calls, each in a `cgtool-step-N` annotation; kernels split by launch."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from cgtool.capture.kernel_split import STEP_PREFIX, chrome_trace, split_kernels

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(steps):
            with record_function(f"{STEP_PREFIX}{i}"):
                fn()
            torch.cuda.synchronize()
    return split_kernels(chrome_trace(prof))


def read_pieces(kept: list[Any]) -> tuple[list[Any], str]:
    """The kept CUDA graphs read through cuda-bindings (empty ones dropped), and why not when they cannot be read
    ("" when read, or nothing was kept)."""
    if not kept:
        return [], "no CUDAGraph kept its graph"
    try:
        from cgtool.graph.cuda import read_cuda_graph

        graphs = [read_cuda_graph(g.raw_cuda_graph()) for g in kept]
    except Exception as exc:  # noqa: BLE001 - cuda-bindings missing or too old for the driver, a destroyed graph
        return [], f"{type(exc).__name__}: {first_line(str(exc))[:160]}"
    return [g for g in graphs if g.nodes], ""


def _pair(graphs: list[Any], index: int, kernels: int) -> Any:
    """The recorded graph of the index-th launch, when recordings and launches line up (same kernel count)."""
    if index < len(graphs) and len(graphs[index].kernels) == kernels:
        return graphs[index]
    same = [g for g in graphs if len(g.kernels) == kernels]
    return same[0] if len(same) == 1 else None


def time_prepared(prep: Prepared, script: Script, settings: PartialSettings, what: str, state: Any = None) -> Timings:
    """bench's alternating measurement of eager against `replay` (here the pieced or module-graphed step):
    a short run for capture, the careful one for `bench --piecewise` (settings careful=True). With setup's
    `state`, a step that advances a counter is timed in blocks from the checked state (capture/counters.py)."""
    if state is not None:
        from cgtool.capture.counters import find_counters

        safe = settings.check_steps if settings.replay_check else settings.warmup
        prep.guard = find_counters(state, prep.fns["eager"], prep.stream, safe)
    careful = settings.careful
    budget = settings.budget_s if careful else settings.timing_budget_s
    s = MeasureSettings(budget_s=budget, target=settings.target if careful else 0.02, min_time_s=min(2.0, budget / 2),
                        iters=settings.iters if careful else None)
    r = BenchResult.from_rounds(measure(prep, s, PhaseLog()), script=script.path, entry=script.entry)
    wall = r.speedup_wall
    return Timings(r.eager.gpu.median, r.replay.gpu.median, r.iterations, prep.capture_ms, None, (
        f"bench's method ({'careful' if careful else 'short run'}): eager and {what} in alternating blocks, CUDA "
        f"events; {r.stopped_by} after {r.elapsed_s:.1f} s; wall-clock speedup {wall.point:.2f}x "
        f"({wall.low:.2f}-{wall.high:.2f})" + (f"; {prep.guard.message()}" if prep.guard is not None else "")))
