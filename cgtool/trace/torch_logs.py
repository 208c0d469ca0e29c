"""torch's log artifacts that cgtool switches on (`cudagraphs`, `graph_breaks`, `recompiles`), shared by the
observers that need them. `torch._logging.set_logs(...)` replaces every setting at once, so each observer asks for
its artifacts here and the union is applied (in the worker; records below WARNING stay off the console)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

from cgtool.trace.patches import Patches

_wanted: Counter[str] = Counter()


def want(*artifacts: str) -> None:
    _wanted.update(artifacts)
    _apply()


def release(*artifacts: str) -> None:
    _wanted.subtract(artifacts)
    for a in [a for a, n in _wanted.items() if n <= 0]:
        del _wanted[a]
    _apply()


def keep_records(accept: Callable[[str], bool], keep: Callable[[logging.LogRecord, str], None]) -> Callable[[], None]:
    """Hand every record of a logger whose name `accept`s to `keep(record, logger_name)`; records below WARNING
    (the levels cgtool switched on) stay off the user's console. torch's loggers do not propagate to the root, and
    Logger.handle runs once per record on the emitting logger, so the hook sits there. Returns the undo."""
    orig = logging.Logger.handle

    def handle(logger: logging.Logger, record: logging.LogRecord) -> None:
        if accept(logger.name):
            try:
                keep(record, logger.name)
            except Exception:
                pass
            if record.levelno < logging.WARNING:
                return
        orig(logger, record)

    patches = Patches()
    patches.set(logging.Logger, "handle", handle)
    return patches.undo_all


def _apply() -> None:
    import torch

    try:
        flags: dict[str, Any] = {a: True for a in _wanted}
        torch._logging.set_logs(**flags)
    except Exception:
        pass


__all__ = ["keep_records", "release", "want"]
