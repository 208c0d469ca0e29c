"""The GPU harness: warmup on a side stream, capture one iteration with static inputs, read the graph.

Mirrors what torch.cuda.make_graphed_callables does: warm up on a side stream, keep the capture's
inputs as static buffers, capture with torch.cuda.graph(keep_graph=True), and hold the static output.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from cgtool.model.job import RunSettings
from cgtool.model.frame import Frame
from cgtool.model.graph_memory import GraphMemory
from cgtool.model.phase_log import PhaseLog
from cgtool.model.report import ErrorRecord
from cgtool.script.contract import Args
from cgtool.script.errors import cuda_error_name, first_line
from cgtool.script.frames import user_frames_of_traceback
from cgtool.script.session import ScriptSession


@dataclass
class Captured:
    graph: Any  # torch.cuda.CUDAGraph (keep_graph=True)
    stream: Any  # the side stream used for warmup and capture
    session: ScriptSession  # the script on its state: eager calls of the step (replay check, timing, profiles)
    static_inputs: Args | None
    static_output: Any
    capture_ms: float
    memory: GraphMemory | None = None  # the graph's private pool and static buffers (cgtool.capture.memory)

    @property
    def state(self) -> Args:
        """setup()'s state the graph was captured on."""
        assert self.session.state is not None  # a capture runs after setup
        return self.session.state

    @property
    def pool_bytes(self) -> int:
        """Bytes the graph's private pool holds (the allocator's segments of that pool)."""
        return self.memory.pool_reserved if self.memory is not None else 0


class CaptureFailed(Exception):
    def __init__(self, record: ErrorRecord) -> None:
        super().__init__(record.message)
        self.record = record


def run_to_capture(session: ScriptSession, settings: RunSettings, log: PhaseLog, analysis: Any = None,
                   on_state: Callable[[Args, str], None] | None = None, pool: Any = None,
                   stream: Any = None, trace_allocations: bool = False) -> Captured:
    """setup → warmup on a side stream → inputs(n) → capture: the one sequence `capture`, `lint` and `bench`
    share. `analysis` (the GPU tracer) watches warmup and capture when given; a session with a state skips setup
    (made already); `on_state(state, phase)` hears the state after setup and after warmup (it may raise to stop).
    `pool` (a pool id) captures into a pool other graphs share; graphs that share a pool must also share the
    capture `stream` (the allocator reuses a free block only on the stream it was allocated on: a new stream
    per capture would share nothing). Raises ScriptRaised when the script raises, CaptureFailed when the capture does."""
    import torch

    label = f"size={session.size}" if session.size is not None else ""
    n_warm = settings.warmup
    if session.state is None:
        log.phase("setup", label)
    state = session.setup()
    if on_state is not None:
        on_state(state, "setup")
    stream = torch.cuda.Stream() if stream is None else stream
    log.phase("warmup", f"{n_warm} iterations on a side stream {label}".strip())
    with analysis.tracing() if analysis is not None else nullcontext():
        session.warmup(n_warm, stream, analysis)
        if on_state is not None:
            on_state(state, "warmup")
        mode = settings.capture_mode
        log.phase("capture", f"capture_error_mode={mode} {label}".strip())
        static_inputs = session.inputs(n_warm)
        captured = capture(session, static_inputs, stream, mode, analysis, pool, trace=trace_allocations)
    return captured


def capture(session: ScriptSession, static_inputs: Args | None, stream: Any, mode: str, analysis: Any = None,
            pool: Any = None, trace: bool = False) -> Captured:
    """Capture one call of step on `stream` (into `pool` when given); raise CaptureFailed naming the user's
    line. The graph's memory is read from the allocator afterwards (cgtool.capture.memory); with `trace`, also
    the capture's allocations and frees (a bench sweep's shared-pool model, cgtool/bench/pool_model.py)."""
    import dataclasses

    import torch

    from cgtool.capture.memory import AllocationTrace

    graph = torch.cuda.CUDAGraph(keep_graph=True)
    torch.cuda.synchronize()
    allocated = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    out = None
    recorder = AllocationTrace(stream)
    try:
        with analysis.iteration("capture", static_inputs) if analysis is not None else nullcontext():
            with recorder if trace else nullcontext():
                with torch.cuda.graph(graph, pool=pool, stream=stream, capture_error_mode=mode):
                    out = session.call(static_inputs)
    except Exception as exc:
        raise CaptureFailed(capture_error(exc, analysis)) from None
    ms = (time.perf_counter() - t0) * 1e3
    peak = max(0, torch.cuda.max_memory_allocated() - allocated)
    memory = graph_memory(graph, static_inputs, out, peak)
    if memory is not None and recorder.trace is not None:
        memory = dataclasses.replace(memory, alloc_trace=recorder.trace)
    return Captured(graph, stream, session, static_inputs, out, ms, memory)


def graph_memory(graph: Any, static_inputs: Any, out: Any, peak: int | None) -> GraphMemory | None:
    """The captured graph's pool (reserved, allocated) and static buffers; None where torch cannot say."""
    from cgtool.capture.memory import pool_memory, tensor_bytes

    try:
        reserved, allocated = pool_memory(graph.pool())
        return GraphMemory(reserved, allocated, tensor_bytes(static_inputs), tensor_bytes(out), peak)
    except Exception:  # an allocator without snapshots (a custom allocator backend): no figure rather than a wrong one
        return None


def capture_error(exc: BaseException, analysis: Any = None) -> ErrorRecord:
    """An ErrorRecord for a failed capture: the first error in the chain that names a user frame."""
    chain: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and e not in chain:
        chain.append(e)
        e = e.__cause__ or e.__context__
    frames: tuple[Frame, ...] = ()
    passed: tuple[str, ...] = ()
    root = chain[-1]  # the earliest error (capture_end's error chains onto the user's)
    for candidate in reversed(chain):
        frames = user_frames_of_traceback(candidate.__traceback__)
        if frames:
            root = candidate
            # raised at the user's line: what the capture ran before it, it got past (not after a guessed culprit)
            passed = analysis.passed_lines(frames) if analysis is not None else ()
            break
    if not frames and analysis is not None:
        last = analysis.last_user_frame()
        if last is not None:
            frames = (last,)
    text = " | ".join(first_line(str(c)) for c in reversed(chain))
    return ErrorRecord(
        phase="capture",
        type=type(root).__name__,
        message=first_line(str(root)) or type(root).__name__,
        frames=frames,
        cuda_error=cuda_error_name(text),
        passed=passed,
    )


def read_graph(captured: Captured, driver_dot_path: str | None):
    """(Graph, read_ms, driver_dot_ms) for the captured graph; the driver DOT goes to driver_dot_path."""
    from cgtool.graph.cuda import read_cuda_graph, write_driver_dot

    handle = captured.graph.raw_cuda_graph()
    t0 = time.perf_counter()
    graph = read_cuda_graph(handle)
    t1 = time.perf_counter()
    if driver_dot_path:
        write_driver_dot(handle, driver_dot_path)
    t2 = time.perf_counter()
    return graph, (t1 - t0) * 1e3, (t2 - t1) * 1e3


def instantiate(captured: Captured) -> float:
    """Instantiate the kept graph (ms); torch would otherwise do it on the first replay."""
    import torch

    t0 = time.perf_counter()
    if hasattr(captured.graph, "instantiate"):
        captured.graph.instantiate()
    else:
        captured.graph.replay()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3
