"""Analysis during the GPU run: the op tracer over warmup and capture, the watcher of stream and
synchronize calls, and torch's sync debug mode (recorded by the tracer at the user's line)."""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from typing import Any, ContextManager, Iterator

from cgtool.model.finding import Finding
from cgtool.model.frame import Frame


class GpuAnalysis:
    def __init__(self, enabled: bool = True, node_counts: bool = True) -> None:
        self.tracer: Any = None
        self.modules: Any = None  # ModulePaths: the running module at each op (node lines only)
        if enabled:
            from cgtool.trace.tracer import Tracer

            self.tracer = Tracer(sync_debug=True)
            if not node_counts:
                self.tracer.node_count = None
            else:
                from cgtool.trace.module_paths import ModulePaths

                self.modules = ModulePaths(self.tracer)

    @contextmanager
    def tracing(self) -> Iterator[None]:
        """Around warmup and capture (not the replay check or timing, which run untraced)."""
        if self.tracer is None:
            yield
            return
        from cgtool.trace.compile_watch import dynamo_off
        from cgtool.trace.cuda_watch import watch_cuda_calls

        # dynamo would trace into the tracer's modes; compiled code found here goes to the compiled run instead
        hooks = self.modules.hooks() if self.modules is not None else nullcontext()
        with dynamo_off(), self.tracer, watch_cuda_calls(self.tracer.stream_event), hooks:
            yield

    def iteration(self, index: int | str, inputs: Any = None) -> ContextManager[Any]:
        return self.tracer.iteration(index, inputs=inputs) if self.tracer is not None else nullcontext()

    def last_user_frame(self) -> Frame | None:
        return self.tracer.last_user_frame() if self.tracer is not None else None

    def first_capture_frame(self) -> Frame | None:
        """The step's line of the first op recorded during capture (where an empty graph's work went)."""
        if self.tracer is None:
            return None
        trace = self.tracer.trace
        for it in trace.iterations:
            if it.phase == "capture":
                for op in it.ops:
                    index = op.outer if op.outer >= 0 else op.frame
                    if index >= 0:
                        return trace.frames[index]
        return None

    def passed_lines(self, failed_at: tuple[Frame, ...]) -> tuple[str, ...]:
        """The user's lines ("file:line") where the capture issued an op or a stream call before it failed,
        other than the failure's own frames: lines the capture got past."""
        if self.tracer is None:
            return ()
        trace = self.tracer.trace
        captured = {it.index for it in trace.iterations if it.phase == "capture"}
        indices = {i for it in trace.iterations if it.index in captured for op in it.ops for i in (op.frame, op.outer)}
        indices |= {ev.frame for ev in trace.events if ev.iteration in captured}
        failed = {(f.file, f.line) for f in failed_at}
        lines = {(f.file, f.line) for f in map(trace.frame, indices) if f is not None} - failed
        return tuple(f"{file}:{line}" for file, line in sorted(lines))

    def findings(self) -> list[Finding]:
        if self.tracer is None:
            return []
        from cgtool.checks import run_checks

        return run_checks(self.tracer.trace)
