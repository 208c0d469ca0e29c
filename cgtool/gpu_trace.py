"""Analysis during the GPU run: the op tracer over warmup and capture, plus torch's sync debug mode.

torch.cuda.set_sync_debug_mode("warn") warns on synchronizing calls without saying where; the
warning hook here attributes each one to the innermost user frame.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager, nullcontext
from typing import Any, Iterator

from cgtool.findings import Finding
from cgtool.frames import innermost_user_frame
from cgtool.report import Frame


class GpuAnalysis:
    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.tracer: Any = None
        self.sync_frames: list[tuple[str, Frame]] = []
        if enabled:
            from cgtool.trace import Tracer

            self.tracer = Tracer()

    @contextmanager
    def tracing(self) -> Iterator[None]:
        if not self.enabled:
            yield
            return
        with self.tracer if self.tracer is not None else nullcontext(), self._sync_debug():
            yield

    @contextmanager
    def _sync_debug(self) -> Iterator[None]:
        import torch

        previous = warnings.showwarning
        old_mode = torch.cuda.get_sync_debug_mode()

        def hook(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
            text = str(message)
            if "synchronizing CUDA operation" in text:
                frame = innermost_user_frame()
                if frame is not None:
                    self.sync_frames.append((text, frame))
                return
            previous(message, category, filename, lineno, file, line)

        warnings.showwarning = hook
        torch.cuda.set_sync_debug_mode("warn")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("always")
                warnings.showwarning = hook
                yield
        finally:
            torch.cuda.set_sync_debug_mode(old_mode)
            warnings.showwarning = previous

    def findings(self, captured: bool = False) -> list[Finding]:
        """Findings from the trace and from sync warnings on lines the trace did not already flag."""
        if not self.enabled:
            return []
        from cgtool.checks import run_checks
        from cgtool.rules import finding

        out = run_checks(self.tracer.trace) if self.tracer is not None else []
        flagged = {(f.file, f.line) for f in out if f.category == "sync"}
        for text, fr in self.sync_frames:
            if (fr.file, fr.line) not in flagged:
                flagged.add((fr.file, fr.line))
                out.append(finding("CG104", f"torch's sync debug mode: {text.strip()}", file=fr.file, line=fr.line,
                                   source=fr.source, function=fr.function))
        return out
