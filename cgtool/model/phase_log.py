"""PhaseLog: where the pipeline announces its phases (load, setup, warmup, capture, ...) and progress.

The worker connects it to the pipe the parent reads (cgtool/worker/child.py); elsewhere it goes nowhere.
The phase under way is also what an error record names when an exception escapes.
"""

from __future__ import annotations

import time
from typing import Any, Callable


class PhaseLog:
    def __init__(self, send: Callable[[dict[str, Any]], None] | None = None) -> None:
        self._send = send
        self.started = time.perf_counter()
        self.current = ""  # the phase under way

    def emit(self, **event: Any) -> None:
        """Send one event (a dict of JSON-ready values) to whoever listens."""
        if self._send is not None:
            self._send(event)

    def phase(self, name: str, detail: str = "") -> None:
        self.current = name
        self.emit(phase=name, detail=detail, t=round(time.perf_counter() - self.started, 3))
