"""torch's log artifacts that cgtool switches on (`cudagraphs`, `graph_breaks`, `recompiles`), shared by the
observers that need them. `torch._logging.set_logs(...)` replaces every setting at once, so each observer asks for
its artifacts here and the union is applied; what the user set through TORCH_LOGS is left alone."""

from __future__ import annotations

import os
from collections import Counter

_wanted: Counter[str] = Counter()


def want(*artifacts: str) -> None:
    _wanted.update(artifacts)
    _apply()


def release(*artifacts: str) -> None:
    _wanted.subtract(artifacts)
    for a in [a for a, n in _wanted.items() if n <= 0]:
        del _wanted[a]
    _apply()


def _apply() -> None:
    if os.environ.get("TORCH_LOGS"):
        return  # the user's own logging setup wins; the records still come (at the user's levels)
    import torch

    try:
        torch._logging.set_logs(**{a: True for a in _wanted})
    except Exception:
        pass


__all__ = ["release", "want"]
