"""State tensors the step rebinds instead of updating in place (CG406).

`m.avg = 0.9 * m.avg + 0.1 * y.mean(0)` points the attribute at a new tensor each iteration. A captured graph
reads and writes the memory it saw at capture: every replay reads the memory of the tensor that was `m.avg` at
capture and writes the capture's new tensor, so the value does not carry over from one replay to the next as
it does in eager. The old tensor is freed during capture when nothing else holds it, and replay then reads
whatever later reuses that memory (seen on an H200: tests/gpu/test_every_hazard_gpu.py). The Tracer's state watch
records each path of setup's state whose tensor object changed in an iteration (Iteration.rebinds) and whether
the step read the old tensor first: a tensor recomputed before each use (weight norm's `weight`) is not state.
"""

from __future__ import annotations

from cgtool.checks.common import capture_iterations, compared_iterations, finding_at
from cgtool.model.finding import Finding
from cgtool.model.trace import Trace


def check_rebound_state(trace: Trace) -> list[Finding]:
    """Paths rebound, after being read, in the capture iteration or in a steady-state warmup iteration; one
    finding per line, naming its paths (a cache object's layers are rebound together)."""
    by_line: dict[int, list[str]] = {}
    captured = [it for it in capture_iterations(trace) if it.phase == "capture"]
    for it in captured + compared_iterations(trace):
        for r in it.rebinds:
            paths = by_line.setdefault(r.frame, [])
            if r.read and r.path not in paths:
                paths.append(r.path)
    out: list[Finding] = []
    for frame, paths in by_line.items():
        if not paths:
            continue
        paths = sorted(paths)
        named = ", ".join(f"`{p}`" for p in paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        what, there = (f"{named} are", "the tensors that were there") if len(paths) > 1 else \
            (f"{named} is", f"the tensor that was `{paths[0]}`")
        out.append(finding_at(trace, "CG406", frame, (
            f"{what} rebound to a new tensor every iteration, after the step reads the old one: replay keeps "
            f"reading the memory of {there} at capture (and writes the ones made during capture), so the value "
            "does not carry over between replays as it does in eager; once nothing holds the old tensor its "
            "memory is freed and replay reads whatever reuses it; update in place")))
    return out
