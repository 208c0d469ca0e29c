"""State tensors the step rebinds instead of updating in place (CG406).

`m.avg = 0.9 * m.avg + 0.1 * y.mean(0)` points the attribute at a new tensor each iteration. A captured graph
reads and writes the tensors it saw at capture: every replay reads the tensor that was `m.avg` at capture and
writes the capture's new tensor, so the value never moves on; eager keeps updating it. The Tracer's state watch
records each path of setup's state whose tensor object changed in an iteration (Iteration.rebinds) and whether
the step read the old tensor first: a tensor recomputed before each use (weight norm's `weight`) is not state.
"""

from __future__ import annotations

from cgtool.checks.common import capture_iterations, compared_iterations, finding_at
from cgtool.model.finding import Finding
from cgtool.model.trace import Trace


def check_rebound_state(trace: Trace) -> list[Finding]:
    """Paths rebound, after being read, in the capture iteration or in a steady-state warmup iteration."""
    out: list[Finding] = []
    done: set[str] = set()
    captured = [it for it in capture_iterations(trace) if it.phase == "capture"]
    for it in captured + compared_iterations(trace):
        for r in it.rebinds:
            if not r.read or r.path in done:
                continue
            done.add(r.path)
            out.append(finding_at(trace, "CG406", r.frame, (
                f"`{r.path}` is rebound to a new tensor every iteration, after the step reads the old one: replay "
                f"keeps reading the tensor that was `{r.path}` at capture (and writes the one made during capture), "
                "so the value never moves on as it does in eager; update it in place")))
    return out

