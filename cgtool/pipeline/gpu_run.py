"""The capture pipeline on a CUDA device: setup → traced warmup → capture → graph → replay check → timing."""

from __future__ import annotations

import os
from typing import Any

from cgtool.model.job import CaptureSettings
from cgtool.capture.harness import Captured, CaptureFailed, instantiate, read_graph, run_to_capture
from cgtool.capture.compare_runs import DEFAULT_STEPS
from cgtool.capture.replay import check_replay
from cgtool.model.phase_log import PhaseLog
from cgtool.model.report import CAPTURE_FAILED, CAPTURED, ErrorRecord, ReplayCheck, Report, Timings
from cgtool.model.report_parts import CAPTURE_STOPPED, PROFILER_FAILED, Skip
from cgtool.pipeline.timing import quick_timings
from cgtool.script.contract import Script, ScriptRaised
from cgtool.script.errors import first_line
from cgtool.script.frames import user_frames_of_traceback
from cgtool.script.session import ScriptSession


def run_gpu_pipeline(script: Script, settings: CaptureSettings, report: Report, progress: PhaseLog,
                     work_dir: str | None, state: Any = None, on_state: Any = None) -> Captured | None:
    """`state`: setup's state when made already; `on_state`: run_to_capture's hook (the compile watch)."""
    import torch

    from cgtool.checks.capture import check_capture_failure, check_captured
    from cgtool.checks.sync import sync_at_capture_failure
    from cgtool.model.finding import CONFIRMED
    from cgtool.checks.verdict import judge
    from cgtool.pipeline.gpu_analysis import GpuAnalysis
    from cgtool.pipeline.rank_gate import after_capture

    device = torch.device("cuda")
    n_warm = settings.warmup
    check_steps = settings.check_steps
    analysis = GpuAnalysis(enabled=settings.checks, node_counts=settings.node_lines)
    try:
        session = ScriptSession(script, device, settings.size, state)
        captured = run_to_capture(session, settings, progress, analysis, on_state)
    except CaptureFailed as failed:
        report.status = CAPTURE_FAILED
        report.errors.append(failed.record)
        report.findings.extend(judge(analysis.findings(), CAPTURE_FAILED, failed.record, None))
        if analysis.tracer is not None and not any(f.evidence == CONFIRMED for f in report.findings):
            report.findings.extend(sync_at_capture_failure(analysis.tracer.trace, failed.record))
        report.findings.extend(check_capture_failure(failed.record, report.findings))
        frame = failed.record.user_frame
        after_capture(False, f"capture failed at {frame.file}:{frame.line}" if frame else "capture failed")
        report.skipped.append(Skip(CAPTURE_STOPPED, (
                "graph, replay check and timing: capture failed (the CUDA context is now unusable)")))
        return None
    except ScriptRaised:
        report.findings.extend(analysis.findings())  # what ran before the step raised still counts
        raise
    report.findings.extend(analysis.findings())
    report.phase_ms["capture"] = round(captured.capture_ms, 2)  # the captured iteration, traced
    blocked = after_capture(True)  # a distributed run: every rank captured? (None elsewhere)
    report.findings.extend(unwaited_output(script, captured))
    if blocked:
        report.skipped.append(blocked)

    progress.phase("read-graph")
    driver_dot = os.path.join(work_dir, "graph.driver.dot") if work_dir else None
    report.status = CAPTURED
    try:
        graph, read_ms, dot_ms = read_graph(captured, driver_dot)
    except (ImportError, RuntimeError, OSError) as exc:  # cuda-bindings missing or too old for the driver
        report.errors.append(ErrorRecord("read-graph", type(exc).__name__, (
            f"{exc}. Capture worked, but the graph could not be read through cuda-bindings; install the "
            "cuda-bindings major version that matches your driver (pip install 'cuda-bindings>=12.9,<14').")))
        graph = None
    else:
        report.graph = graph
        report.phase_ms["read_graph"] = round(read_ms, 2)
        report.phase_ms["driver_dot"] = round(dot_ms, 2)
        if driver_dot:
            report.outputs["graph.driver.dot"] = driver_dot
    inst_ms = instantiate(captured)
    report.memory = captured.memory
    work = (graph is None or bool(graph.nodes)) and not blocked  # an unreadable graph may still replay
    if settings.replay_check and work:
        progress.phase("replay-check")
        report.replay = guarded_replay_check(captured, n_warm + 1, check_steps)
    if settings.timing and work:
        progress.phase("timing")
        if settings.world_size is not None:  # a rank of a distributed run: the same iterations on every rank
            from cgtool.pipeline.rank_timing import lockstep_timings

            t = lockstep_timings(captured, per_block=settings.timing_per_block, l2_flush=settings.timing_l2_flush)
        else:
            # calls in a row that ran without harm: the checked steps, when the check ran them all
            checked = report.replay is not None and report.replay.status in ("match", "mismatch")
            safe = check_steps if checked else n_warm
            t = quick_timings(captured, settings.timing_budget_s, safe, progress)
        report.timings = Timings(t.eager_us, t.replay_us, t.iterations, captured.capture_ms, inst_ms, t.method)
    if settings.node_lines and work and graph is not None and analysis.tracer is not None:
        progress.phase("node-lines", "each node's line, and its GPU time over profiled replays")
        # a distributed rank skips the eager step: its collectives would wait on ranks that failed to run it
        eager = settings.world_size is None
        report.node_lines = node_lines(captured, graph, analysis.tracer.trace, report, analysis.modules, eager)
    if captured.memory is not None and work and settings.world_size is None:  # last: a second capture of the step
        import dataclasses

        from cgtool.capture.memory import recipe_pool

        progress.phase("memory", "the pool of PyTorch's documented recipe (its own capture stream), for comparison")
        report.memory = dataclasses.replace(captured.memory, recipe_pool_reserved=recipe_pool(captured))
    report.findings = judge(report.findings, CAPTURED, None, report.replay)
    report.findings.extend(check_captured(report, entry_frame(script), analysis.first_capture_frame()))
    return captured


def unwaited_output(script: Script, captured: Captured) -> list:
    """CG610: the captured step returns a functional collective's result it never waited on (cgtool/capture/shards.py)."""
    from cgtool.capture.shards import unwaited_outputs
    from cgtool.model.rules import finding

    names = unwaited_outputs(captured.static_output)
    if not names:
        return []
    frame = entry_frame(script)
    return [finding("CG610", f"the step returns {', '.join(names[:4])} as an AsyncCollectiveTensor whose collective it "
                             "never waited on: the wait is not in the graph, and reading that output after a replay "
                             "waits on the capture's own work (CUDA error: invalid argument)",
                    file=frame.file if frame else script.path, line=frame.line if frame else None,
                    source=frame.source if frame else None, function=frame.function if frame else None)]


def guarded_replay_check(captured: Captured, index: int, steps: int = DEFAULT_STEPS) -> ReplayCheck:
    """The replay check; when it cannot finish (the step raised in its eager run, or the comparison itself
    failed), a ReplayCheck with status "error" that says why: the capture worked, whatever the check says."""
    from cgtool.capture.compare_runs import inputs_label

    label = inputs_label(captured.session.script, index, steps)
    try:
        return check_replay(captured, index, steps)
    except ScriptRaised as raised:
        where = user_frames_of_traceback(raised.exc.__traceback__)
        at = f" at {where[-1].file}:{where[-1].line}" if where else ""
        during = ("the script's inputs() raised while the replay check made its inputs" if raised.phase == "inputs"
                  else "the step (or a replay) raised in the replay check")
        return ReplayCheck("error", label, (), f"{during}{at} ({type(raised.exc).__name__}: "
                           f"{first_line(str(raised.exc))}); replay was not compared", steps=steps)
    except Exception as exc:  # noqa: BLE001 - the check's own failure is reported, never as a failed capture
        import traceback

        traceback.print_exc()
        return ReplayCheck("error", label, (), f"the replay check could not compare replay with eager "
                           f"({type(exc).__name__}: {first_line(str(exc))}); the capture itself worked", steps=steps)


def node_lines(captured: Captured, graph: Any, trace: Any, report: Report, modules: Any = None,
               eager_step: bool = False) -> Any:
    """Which line made each node (the tracer's node counts while capturing), in which module (`modules`:
    ModulePaths), and its median GPU time over profiled replays; without times, the reason in report.skipped.
    With `eager_step`, one profiled eager step gives the lines whose eager time was mostly launch overhead."""
    import time

    from cgtool.model.node_profile import node_profile, rows_from_ops

    t0 = time.perf_counter()
    it = next((it for it in reversed(trace.iterations) if it.phase == "capture"), None)
    ops = it.ops if it is not None else []
    paths = modules.of_ops(it.index, len(ops)) if modules is not None and it is not None else []
    eager = None
    replays, times = profiled_replay_times(captured, graph, report)
    profile = node_profile(graph, trace.frames, ops, rows_from_ops(ops, len(graph.nodes), paths), times)
    if eager_step and times is not None:
        from cgtool.capture.kernel_split import eager_events
        from cgtool.capture.replay_profile import profile_eager_step
        from cgtool.model.node_profile import eager_lines
        from cgtool.model.replay_slower import slower_lines

        try:
            eager = profile_eager_step(lambda: captured.session.call(captured.static_inputs),
                                       captured.stream)
            kernels, cpu_us = eager_events(eager)
            profile.eager = eager_lines(profile, graph, kernels, cpu_us)
            profile.slower = slower_lines(profile, graph, kernels)
        except Exception as exc:  # noqa: BLE001 - the eager comparison is optional to everything else
            eager = None
            report.skipped.append(Skip(PROFILER_FAILED, f"eager versus replay per line: the profiled eager step failed "
                                  f"({type(exc).__name__}: {exc})"))
    if times is not None:  # timeline.json: the same profiles, event by event
        from cgtool.capture.timeline_events import timeline

        profile.timeline = timeline(graph, replays, eager)
    report.phase_ms["node_lines"] = round((time.perf_counter() - t0) * 1e3, 2)
    return profile


def profiled_replay_times(captured: Any, graph: Any, report: Report) -> tuple[Any, Any]:
    """The captured graph's profiled replays and each node's median GPU time in them (graph/node_align.py:
    replay_times), for node_lines here and for compiled code's (pipeline/compiled_lines.py); (None, None) when the
    profiler fails, with the reason in report.skipped."""
    from cgtool.capture.kernel_split import replay_events
    from cgtool.capture.replay_profile import profile_replays
    from cgtool.graph.node_align import replay_times

    try:
        replays = profile_replays(captured.graph)
        return replays, replay_times(graph, replay_events(replays))
    except Exception as exc:  # noqa: BLE001 - the profiler is optional to everything else
        report.skipped.append(Skip(PROFILER_FAILED, (
                f"replay time per node: the profiler failed ({type(exc).__name__}: {exc})")))
        return None, None


def entry_frame(script: Script):
    """The `def` line of the entry function (seen through decorators such as @torch.no_grad()), where
    findings about the whole step are placed; None when it is not the user's code."""
    import inspect

    from cgtool.script.frames import is_user_file, make_frame

    code = getattr(inspect.unwrap(script.step), "__code__", None)
    if code is None or not is_user_file(code.co_filename):
        return None
    import linecache

    line = code.co_firstlineno  # the first decorator's line; step down to the `def` itself
    for n in range(line, line + 20):
        if linecache.getline(code.co_filename, n).lstrip().startswith(("def ", "async def ")):
            line = n
            break
    return make_frame(code.co_filename, line, code.co_name)
