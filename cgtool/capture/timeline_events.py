"""The timeline's events from torch.profiler's chrome traces (read as plain JSON: no torch here): each replay's graph
launch and its kernels, one eager step's outermost aten ops and their kernels, every GPU event tied to the graph
node it ran or matched by kernel identity and order (cgtool/graph/node_align.py), as replay_times and eager_lines
match them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cgtool.capture.kernel_split import TIMED_CATS, correlation, is_graph_launch
from cgtool.graph.model import Graph
from cgtool.graph.node_align import event_key, match, node_key, timed_nodes
from cgtool.model.timeline import EAGER, REPLAY, Slice, Timeline

Trace = dict[str, Any] | list[dict[str, Any]]


def timeline(graph: Graph, replays: Trace, eager: Trace | None = None) -> Timeline:
    """The slices of the profiled replays (`replays`: the trace of the graph.replay() loop) and of one profiled
    eager step (`eager`, optional)."""
    slices = replay_slices(graph, replays)
    if eager is not None:
        slices += eager_slices(graph, eager)
    return Timeline(slices)


def _events(trace: Trace) -> list[dict[str, Any]]:
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    return [e for e in events if e.get("ph") == "X"]


def _lane(e: dict[str, Any]) -> int:
    """A GPU event's stream (args.stream, else its tid), a CPU event's thread."""
    args = e.get("args") or {}
    value = args.get("stream", e.get("tid", 0)) if e.get("cat") in TIMED_CATS else e.get("tid", 0)
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _span(e: dict[str, Any]) -> tuple[float, float]:
    ts = float(e.get("ts", 0))
    return ts, ts + float(e.get("dur", 0))


def _nodes_of(graph: Graph, gpu: Sequence[dict[str, Any]]) -> list[int]:
    """For each GPU event (in GPU start order) the id of the timed node it matched, -1 for none."""
    nodes = timed_nodes(graph)
    got = match([node_key(n) for n in nodes], [event_key(str(e.get("name", "")), str(e.get("cat"))) for e in gpu])
    out = [-1] * len(gpu)
    for node, j in zip(nodes, got):
        if j is not None:
            out[j] = node.id
    return out


def replay_slices(graph: Graph, trace: Trace) -> list[Slice]:
    """Each graph launch (its CPU call) and the GPU events it launched, replay by replay, in launch order."""
    events = _events(trace)
    ran = {correlation(e) for e in events if e.get("cat") in TIMED_CATS}
    # a launch call whose correlation no GPU event carries (a driver call under the runtime's) is no replay
    launches = sorted((e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
                       and is_graph_launch(str(e.get("name", ""))) and correlation(e) in ran - {None}),
                      key=lambda e: float(e.get("ts", 0)))
    run_of = {correlation(e): i for i, e in enumerate(launches)}
    gpu = [e for e in events if e.get("cat") in TIMED_CATS and correlation(e) in run_of]
    t0 = min((float(e.get("ts", 0)) for e in [*launches, *gpu]), default=0.0)
    out = [Slice(REPLAY, str(e.get("name", "")), str(e.get("cat")), float(e.get("ts", 0)) - t0,
                 float(e.get("dur", 0)), _lane(e), -1, run_of[correlation(e)]) for e in launches]
    for run in range(len(launches)):
        mine = sorted((e for e in gpu if run_of[correlation(e)] == run), key=lambda e: float(e.get("ts", 0)))
        for e, node in zip(mine, _nodes_of(graph, mine)):
            out.append(Slice(REPLAY, str(e.get("name", "")), str(e.get("cat")), float(e.get("ts", 0)) - t0,
                             float(e.get("dur", 0)), _lane(e), node, run))
    return out


def eager_slices(graph: Graph, trace: Trace) -> list[Slice]:
    """One eager step: its outermost aten ops on their threads (each named with the node of the first kernel it
    launched), and its GPU events, each with the node it matched."""
    events = _events(trace)
    ops = sorted((e for e in events if e.get("cat") == "cpu_op"),
                 key=lambda e: (float(e.get("ts", 0)), -float(e.get("dur", 0))))
    outer: list[dict[str, Any]] = []
    last: dict[Any, dict[str, Any]] = {}  # thread -> its latest outermost op
    for op in ops:
        held = last.get(op.get("tid"))
        if held is None or not (_span(held)[0] <= _span(op)[0] and _span(op)[1] <= _span(held)[1]):
            outer.append(op)
            last[op.get("tid")] = op
    calls = {correlation(e): e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
             and correlation(e) is not None}
    gpu = sorted((e for e in events if e.get("cat") in TIMED_CATS), key=lambda e: float(e.get("ts", 0)))
    t0 = min((float(e.get("ts", 0)) for e in [*outer, *gpu]), default=0.0)
    nodes = _nodes_of(graph, gpu)
    first_node: dict[int, int] = {}
    for e, node in zip(gpu, nodes):
        call = calls.get(correlation(e))
        if call is None or node < 0:
            continue
        at = float(call.get("ts", 0))
        k = next((i for i, o in enumerate(outer) if o.get("tid") == call.get("tid")
                  and _span(o)[0] <= at <= _span(o)[1]), None)
        if k is not None:
            first_node.setdefault(k, node)
    out = [Slice(EAGER, str(o.get("name", "")), "cpu_op", float(o.get("ts", 0)) - t0, float(o.get("dur", 0)),
                 _lane(o), first_node.get(k, -1)) for k, o in enumerate(outer)]
    out += [Slice(EAGER, str(e.get("name", "")), str(e.get("cat")), float(e.get("ts", 0)) - t0, float(e.get("dur", 0)),
                  _lane(e), node) for e, node in zip(gpu, nodes)]
    return out
