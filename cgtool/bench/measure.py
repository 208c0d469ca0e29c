"""bench's measurement on the GPU: a captured step (Prepared) timed eager against replay in alternating
blocks until the CIs are tight (the stopping rule in adaptive.py), and the GPU busy time per replay (the floor)."""

from __future__ import annotations

import gc
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable

from cgtool.bench.stats import busy_time
from cgtool.model.job import MeasureSettings, RunSettings
from cgtool.model.phase_log import PhaseLog

if TYPE_CHECKING:
    from cgtool.bench.adaptive import AdaptiveResult




@dataclass
class Prepared:
    """A captured step ready to time: the eager and replay callables on their stream."""

    fns: dict[str, Callable[[], None]]
    stream: Any
    capture_ms: float
    instantiate_ms: float
    pool_bytes: int
    memory: Any = None  # GraphMemory of the captured graph
    # a step whose state forbids calls without end (capture/counters.py: a counter every call advances): put back
    # before each block (and before calibrating), and at most guard.max_calls calls per block
    guard: Any = None


def prepare(script: Any, size: int | None, settings: RunSettings, log: PhaseLog,
            trace_allocations: bool = False) -> Prepared:
    """The harness's setup → warmup → capture, then instantiate: a captured step ready to time."""
    import torch

    from cgtool.capture.harness import instantiate, run_to_capture
    from cgtool.script.session import ScriptSession

    state_settings = replace(settings, capture_mode="global")
    captured = run_to_capture(ScriptSession(script, torch.device("cuda"), size), state_settings, log,
                              trace_allocations=trace_allocations)
    inst_ms = instantiate(captured)
    session, state, static_inputs = captured.session, captured.state, captured.static_inputs

    def eager() -> None:
        session.call(static_inputs)

    from cgtool.capture.counters import find_counters

    # no replay check ran: the calls known safe in a row are warmup's
    guard = find_counters(state, eager, captured.stream, settings.warmup)
    if guard is not None:
        log.phase("timing", guard.message())
    return Prepared({"eager": eager, "replay": captured.graph.replay}, captured.stream, captured.capture_ms, inst_ms,
                    captured.pool_bytes, captured.memory, guard)


def measure(prep: Prepared, settings: MeasureSettings, progress: PhaseLog, size: int | None = None) -> AdaptiveResult:
    """Alternating rounds until the CI target (after at least min_time_s), the budget or --iters; GC paused,
    as timeit does; a CPU-speed probe before each block (cgtool.bench.cpu_load)."""
    import torch

    from cgtool.bench.adaptive import Block, run_rounds
    from cgtool.bench.cpu_load import cpu_probe
    from cgtool.bench.timing import calibrate, time_block

    fns, stream = prep.fns, prep.stream
    flush = l2_flusher() if settings.l2_flush else None
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        with torch.cuda.stream(stream):
            block_ms = settings.block_ms
            guard = prep.guard
            reset = guard.reset if guard is not None else None
            most = guard.max_calls if guard is not None else 1000
            iters = {m: (1 if flush else calibrate(fn, target_ms=block_ms, max_iters=most, before=reset))
                     for m, fn in fns.items()}

            def measure_round(mode: str) -> Block:
                if reset is not None:
                    reset()
                probe = cpu_probe()  # how fast the CPU runs right now, just before the block
                gpu, wall = time_block(fns[mode], iters[mode], stream, flush)
                return Block({"gpu": [gpu], "wall": [wall]}, iterations=iters[mode], probe_us=probe)

            def on_progress(p: Any) -> None:
                progress.emit(progress=p.to_json(), size=size)

            progress.phase("measure", f"size={size}" if size is not None else "")
            fixed = settings.iters
            return run_rounds(
                measure_round,
                target_rel_ci=None if fixed else settings.target,
                budget_s=math.inf if fixed else settings.budget_s,
                min_time_s=settings.min_time_s,
                max_iterations=int(fixed) if fixed else 1_000_000,
                on_progress=on_progress,
            )
    finally:
        if was_enabled:
            gc.enable()


def l2_flusher():
    """A callable that evicts the L2 cache by writing a buffer twice its size."""
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    size = 2 * int(getattr(props, "L2_cache_size", 0) or 64 * 2**20)
    buf = torch.empty(size, dtype=torch.uint8, device="cuda")
    return lambda: buf.zero_()


def kernel_floor_us(replay: Any, n: int = 5) -> float | None:
    """GPU busy time per replay: the union of its kernels' [start, end) intervals from torch's profiler (CUPTI),
    divided by n; None where it is unavailable. Overlapping kernels count once, so this is a floor replay cannot
    beat (a plain sum of kernel times is not: wav2vec2's sum came out 30% above its replay time)."""
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(n):
                replay()
            torch.cuda.synchronize()
        intervals = []
        for evt in prof.events():
            if not str(getattr(evt, "device_type", "")).endswith("CUDA"):
                continue
            start = getattr(evt, "time_range", None)
            if start is not None and start.end > start.start:
                intervals.append((float(start.start), float(start.end)))
        busy = busy_time(intervals)
        return busy / n if busy > 0 else None
    except Exception:
        return None
