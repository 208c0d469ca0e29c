"""State the step changes in a way a replay does not: state tensors rebound instead of updated in place (CG406),
Python state changed every iteration (CG408).

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
from cgtool.model.trace import HostChange, Trace


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


def check_host_state(trace: Trace) -> list[Finding]:
    """CG408: Python state of setup's that every steady-state iteration changed (a list that grows, a counter that
    moves; the Tracer's state watch, Iteration.host_changes), and the capture iteration too where it completed. A
    replay runs none of the step's Python: eager's list grows and its counter moves, the replayed run's stay as
    they were after capture. Changes made once (lazy initialization, the first iterations) are not reported. One
    finding per line: the op that made the tensors a list grew by, else the step's `def` line."""
    steady = [it for it in compared_iterations(trace) if it.error is None]
    steady += [it for it in trace.iterations if it.phase == "capture" and it.error is None and it.ops]
    steady = [it for it in steady if trace.iterations and it is not trace.iterations[0]]  # the first has no before
    if len(steady) < 2:
        return []
    changes: list[dict[str, HostChange]] = [{c.path: c for c in it.host_changes} for it in steady]
    every = [path for path in changes[0] if all(path in c for c in changes[1:])]
    by_frame: dict[int, list[HostChange]] = {}
    for path in every:
        last = changes[-1][path]
        by_frame.setdefault(last.frame, []).append(last)
    out: list[Finding] = []
    for frame, found in sorted(by_frame.items()):
        shown = [f"`{c.path}` ({_moved(c, changes)})" for c in found[:3]]
        more = f" and {len(found) - 3} more" if len(found) > 3 else ""
        tensors = any(c.tensors for c in found)
        out.append(finding_at(trace, "CG408", frame, (
            f"the step changes Python state at every iteration: {', '.join(shown)}{more}. A replay runs none of "
            "the step's Python, so after capture this stays as it was at capture" +
            (" (the list keeps the tensor put in it during capture: the graph's own memory, overwritten by every "
             "replay)" if tensors else "") +
            "; what reads it later (logging, a schedule, a checkpoint every N steps) sees no progress")))
    return out


def _moved(last: HostChange, changes: list[dict[str, HostChange]]) -> str:
    """`len 3 → len 4 → len 5`: the path's values over the steady iterations."""
    values = [changes[0][last.path].before] + [c[last.path].after for c in changes]
    shown = values if len(values) <= 4 else values[:2] + ["…"] + values[-1:]
    return " → ".join(shown)
