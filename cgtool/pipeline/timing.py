"""capture's timing: a short run of `cgtool bench`'s own measurement on the graph just captured."""

from __future__ import annotations

from cgtool.bench.measure import Prepared, measure
from cgtool.bench.result import BenchResult
from cgtool.capture.harness import Captured
from cgtool.model.job import MeasureSettings
from cgtool.model.phase_log import PhaseLog
from cgtool.model.report import Timings


def quick_timings(captured: Captured, budget_s: float = 3.0, safe_calls: int = 3,
                  progress: PhaseLog | None = None) -> Timings:
    """Per-iteration eager and replay GPU times: a short run of `cgtool bench`'s own measurement
    (bench.measure.measure: alternating blocks, CUDA events, blocks on a slowed CPU left out). A step that
    advances a counter (capture/counters.py) is timed in blocks of at most `safe_calls` calls (the calls in a row
    the replay check ran), each from the current state; the message goes to `progress` before timing."""
    from cgtool.capture.counters import find_counters

    def eager() -> None:
        captured.session.step(captured.static_inputs, "timing")

    guard = find_counters(captured.state, eager, captured.stream, safe_calls)
    if guard is not None and progress is not None:
        progress.phase("timing", guard.message())
    prep = Prepared({"eager": eager, "replay": captured.graph.replay}, captured.stream, captured.capture_ms, 0.0, 0,
                    guard=guard)
    settings = MeasureSettings(budget_s=budget_s, target=0.02, min_time_s=min(1.0, budget_s / 2))
    r = BenchResult.from_rounds(measure(prep, settings, PhaseLog()), script=captured.session.script.path,
                                entry=captured.session.script.entry)
    kept = f"; {r.cpu_load.slowed} blocks on a CPU slowed by other load left out" if r.cpu_load and r.cpu_load.slowed else ""
    return Timings(
        eager_us=r.eager.gpu.median,
        replay_us=r.replay.gpu.median,
        iterations=r.iterations,
        method=(f"median of {r.eager.gpu.n} eager and {r.replay.gpu.n} replay blocks taking turns, CUDA events on "
                f"the capture stream ({r.stopped_by} after {r.elapsed_s:.1f} s{kept}); `cgtool bench` measures carefully"
                + (f"; {guard.message()}" if guard is not None else "")),
    )
