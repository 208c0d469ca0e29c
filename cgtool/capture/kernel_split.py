"""Which kernels of a profiled step ran inside CUDA graphs: a torch.profiler chrome trace, read as plain JSON.

A kernel launched by a graph carries the CUPTI correlation id of the `cudaGraphLaunch` call that launched
it; a kernel launched one by one carries that of its `cudaLaunchKernel` (or a library's launch). Steps are
the `cgtool-step-N` user annotations the profiling run puts around each step. No torch here: tests feed
recorded traces.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

STEP_PREFIX = "cgtool-step-"
GRAPH_LAUNCH = ("cudaGraphLaunch", "cuGraphLaunch")  # runtime and driver names (versioned suffixes too)


@dataclass
class KernelSplit:
    """The last profiled step (the steady state: earlier ones may still record or recompile): kernels in graphs
    and outside, their GPU time, and its graph launches in order as (kernels, gpu_us); `per_step` has every
    step's (kernels in graphs, kernels outside), to show a step that had not settled."""

    steps: int
    kernels_in_graphs: int = 0
    kernels_outside: int = 0
    us_in_graphs: float = 0.0
    us_outside: float = 0.0
    launches: list[tuple[int, float]] = field(default_factory=list)
    outside: list[tuple[str, int]] = field(default_factory=list)  # kernel name, launches in the step, most first
    per_step: list[tuple[int, int]] = field(default_factory=list)

    @property
    def settled(self) -> bool:
        """Every profiled step ran the same kernels the same way."""
        return len(set(self.per_step)) <= 1


def chrome_trace(prof: Any) -> dict[str, Any] | list[dict[str, Any]]:
    """A finished torch.profiler run's chrome trace, read back (the profiler only writes it to a file)."""
    with tempfile.TemporaryDirectory(prefix="cgtool-prof-") as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)


def is_graph_launch(name: str) -> bool:
    return name.startswith(GRAPH_LAUNCH)


def split_kernels(trace: dict[str, Any] | list[dict[str, Any]]) -> KernelSplit:
    """Classify the kernels of a chrome trace (`prof.export_chrome_trace`) by how they were launched, per
    `cgtool-step-N` annotation (a kernel belongs to the step whose annotation holds its launch call); without
    annotations, all kernels count as one step."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    # the CPU side of each annotation (the profiler also writes a `gpu_user_annotation` of the same name, in GPU
    # time: counting it too doubled the steps)
    steps = sorted((e for e in events if str(e.get("name", "")).startswith(STEP_PREFIX) and e.get("ph") == "X"
                    and e.get("cat") != "gpu_user_annotation"), key=lambda e: float(e.get("ts", 0)))
    launch_ts: dict[int, float] = {}  # correlation id of a graph launch -> its CPU timestamp
    call_ts: dict[int, float] = {}  # correlation id of any launch call -> its CPU timestamp
    for e in events:
        if e.get("cat") in ("cuda_runtime", "cuda_driver"):
            corr = correlation(e)
            if corr is not None:
                call_ts[corr] = float(e.get("ts", 0))
                if is_graph_launch(str(e.get("name", ""))):
                    launch_ts[corr] = float(e.get("ts", 0))
    kernels = [e for e in events if e.get("cat") == "kernel" and e.get("ph") == "X"]
    by_step: list[list[dict[str, Any]]] = [[] for _ in steps] or [kernels]
    if steps:
        spans = [(float(s.get("ts", 0)), float(s.get("ts", 0)) + float(s.get("dur", 0))) for s in steps]
        for k in kernels:
            ts = call_ts.get(correlation(k) or -1)
            i = next((i for i, (lo, hi) in enumerate(spans) if ts is not None and lo <= ts <= hi), None)
            if i is not None:
                by_step[i].append(k)
    split = KernelSplit(steps=len(steps))
    for ks in by_step:
        split.per_step.append((sum(1 for k in ks if _in_graph(k, launch_ts)), sum(1 for k in ks if not _in_graph(k, launch_ts))))
    last = by_step[-1]
    in_graph = [k for k in last if _in_graph(k, launch_ts)]
    outside = [k for k in last if not _in_graph(k, launch_ts)]
    split.kernels_in_graphs, split.kernels_outside = len(in_graph), len(outside)
    split.us_in_graphs = sum(float(k.get("dur", 0)) for k in in_graph)
    split.us_outside = sum(float(k.get("dur", 0)) for k in outside)
    split.outside = Counter(str(k.get("name", "?")) for k in outside).most_common()
    split.launches = _launches_of_last_step(steps, launch_ts, in_graph)
    return split


def _in_graph(k: dict[str, Any], launch_ts: dict[int, float]) -> bool:
    return correlation(k) in launch_ts or _graph_node(k)


def _launches_of_last_step(steps: list[dict[str, Any]], launch_ts: dict[int, float],
                           in_graph: list[dict[str, Any]]) -> list[tuple[int, float]]:
    """The graph launches inside the last step annotation, in order, with their kernels' count and time."""
    if steps:
        last = steps[-1]
        lo, hi = float(last.get("ts", 0)), float(last.get("ts", 0)) + float(last.get("dur", 0))
        wanted = sorted(c for c, ts in launch_ts.items() if lo <= ts <= hi)
    else:
        wanted = sorted(launch_ts, key=lambda c: launch_ts[c])
    order: dict[int | None, int] = {c: i for i, c in enumerate(sorted(wanted, key=lambda c: launch_ts[c]))}
    acc: list[list[float]] = [[0, 0.0] for _ in order]
    for k in in_graph:
        i = order.get(correlation(k))
        if i is not None:
            acc[i][0] += 1
            acc[i][1] += float(k.get("dur", 0))
    return [(int(c), us) for c, us in acc]


def correlation(e: dict[str, Any]) -> int | None:
    args = e.get("args") or {}
    value = args.get("correlation", args.get("correlation id"))
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _graph_node(e: dict[str, Any]) -> bool:
    """Newer CUPTI marks graph kernels with their node id (0 or absent for kernels launched one by one)."""
    args = e.get("args") or {}
    try:
        return int(args.get("graph node id", 0) or 0) != 0
    except (TypeError, ValueError):
        return False


TIMED_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def replay_events(trace: dict[str, Any] | list[dict[str, Any]]) -> list[list[tuple[str, str, float]]]:
    """Each graph launch's kernel, memcpy and memset events as (name, cat, µs), in GPU start order, one list per
    launch in launch order: the replays of a profiled `graph.replay()` loop (cgtool/graph/node_align.py matches
    them to the graph's nodes)."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    launches: dict[int, float] = {}
    for e in events:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and is_graph_launch(str(e.get("name", ""))):
            corr = correlation(e)
            if corr is not None:
                launches[corr] = float(e.get("ts", 0))
    groups: dict[int, list[dict[str, Any]]] = {c: [] for c in launches}
    for e in events:
        if e.get("cat") in TIMED_CATS and e.get("ph") == "X":
            corr = correlation(e)
            if corr in groups:
                groups[corr].append(e)
    out = []
    for corr in sorted(groups, key=lambda c: launches[c]):
        ks = sorted(groups[corr], key=lambda e: float(e.get("ts", 0)))
        if ks:
            out.append([(str(k.get("name", "?")), str(k.get("cat")), float(k.get("dur", 0))) for k in ks])
    return out


def eager_events(trace: dict[str, Any] | list[dict[str, Any]]) -> tuple[list[tuple[str, str, float, int]], list[float]]:
    """One eager step's kernel, memcpy and memset events in GPU start order as (name, cat, µs, op): `op` indexes the
    second list, the CPU µs of each outermost aten op (a cpu_op on the launching thread whose span holds the
    launch call and that no other op holds), -1 when no op holds the launch."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    ops = sorted(((float(e.get("ts", 0)), float(e.get("ts", 0)) + float(e.get("dur", 0)), e.get("tid"))
                  for e in events if e.get("cat") == "cpu_op" and e.get("ph") == "X"), key=lambda o: (o[0], -o[1]))
    outer: list[tuple[float, float, Any]] = []  # ops held by no other op on their thread
    last: dict[Any, tuple[float, float, Any]] = {}  # thread -> its latest outermost op
    for span in ops:
        held = last.get(span[2])
        if held is None or not (held[0] <= span[0] and span[1] <= held[1]):
            outer.append(span)
            last[span[2]] = span
    calls: dict[int | None, tuple[float, Any]] = {}
    for e in events:
        if e.get("cat") in ("cuda_runtime", "cuda_driver"):
            corr = correlation(e)
            if corr is not None:
                calls[corr] = (float(e.get("ts", 0)), e.get("tid"))
    rows = []
    for k in sorted((e for e in events if e.get("cat") in TIMED_CATS and e.get("ph") == "X"),
                    key=lambda e: float(e.get("ts", 0))):
        call = calls.get(correlation(k))
        op = -1
        if call is not None:
            op = next((i for i, o in enumerate(outer) if o[2] == call[1] and o[0] <= call[0] <= o[1]), -1)
        rows.append((str(k.get("name", "?")), str(k.get("cat")), float(k.get("dur", 0)), op))
    return rows, [o[1] - o[0] for o in outer]
