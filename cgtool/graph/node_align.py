"""Match a graph's nodes to the kernels a profiler saw (one eager step, or one replay of the graph) by kernel
identity and order, never by index: the profiler records no node id (torch 2.11, driver CUDA 13.0), an eager step
launches other kernels than the graph holds (whisper: 176 kernels per replay, 151 in one eager step) and a replay
runs a graph's branches in another order than they were captured (docs/node-lines.md)."""

from __future__ import annotations

import difflib
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

from cgtool.graph.model import Graph, GraphNode
from cgtool.graph.names import demangle

TIMED_KINDS = ("kernel", "memcpy", "memset")  # the nodes a profiler times (its kernel, gpu_memcpy, gpu_memset events)
_SPACE = re.compile(r"\s+")
_MEMCPY = re.compile(r"memcpy\s+(\w+)", re.IGNORECASE)


def kernel_key(name: str) -> str:
    """One spelling of a kernel's name for both sides: the driver's mangled symbol and the profiler's demangled
    one (Kineto demangles as __cxa_demangle does) become the same text, spaces dropped."""
    return _SPACE.sub("", demangle(name))


def node_key(node: GraphNode) -> str:
    """The key of a graph node as a profiler event would show it: kernel name, "memcpy DtoD", "memset"."""
    if node.kind == "kernel":
        return kernel_key(node.mangled or node.name)
    if node.kind == "memcpy":
        return f"memcpy {node.copy_kind or '?'}"
    return node.kind


def event_key(name: str, cat: str = "kernel") -> str:
    """The key of a profiler event: `Memcpy DtoD (Device -> Device)` -> "memcpy DtoD", `Memset (Device)` ->
    "memset", a kernel -> kernel_key(name)."""
    if cat == "gpu_memcpy" or name.startswith("Memcpy"):
        m = _MEMCPY.search(name)
        return f"memcpy {m.group(1)}" if m else "memcpy ?"
    if cat == "gpu_memset" or name.startswith("Memset"):
        return "memset"
    return kernel_key(name)


def timed_nodes(graph: Graph) -> list[GraphNode]:
    """The nodes a replay's profile can time, in the graph's node order (creation order, a topological order)."""
    return [n for n in graph.nodes if n.kind in TIMED_KINDS]


def match(a: Sequence[str], b: Sequence[str]) -> list[int | None]:
    """For each a[i], the index of the b element it matches, or None. Identical keys only; an element is used once.

    Same multiset of keys (a replay against its graph, whatever order the streams ran in): the k-th occurrence of
    a key in `a` matches its k-th occurrence in `b`. Otherwise the longest common subsequence (difflib, no junk
    heuristic) matches first, and what is left of each key pairs in order where it does not cross a match."""
    if list(a) == list(b):
        return list(range(len(a)))
    pos_a, pos_b = _positions(a), _positions(b)
    if {k: len(v) for k, v in pos_a.items()} == {k: len(v) for k, v in pos_b.items()}:
        out: list[int | None] = [None] * len(a)
        for k, ia in pos_a.items():
            for i, j in zip(ia, pos_b[k]):
                out[i] = j
        return out
    out = [None] * len(a)
    sm = difflib.SequenceMatcher(None, list(a), list(b), autojunk=False)
    for tag, i1, i2, j1, _j2 in sm.get_opcodes():
        if tag == "equal":
            for d in range(i2 - i1):
                out[i1 + d] = j1 + d
    _fill_between(a, b, out)
    return out


def _positions(seq: Sequence[str]) -> dict[str, list[int]]:
    pos: dict[str, list[int]] = defaultdict(list)
    for i, k in enumerate(seq):
        pos[k].append(i)
    return pos


def _fill_between(a: Sequence[str], b: Sequence[str], out: list[int | None]) -> None:
    """Pair the unmatched elements between consecutive matches by key, in order (a kernel the LCS skipped
    because its neighbours differ still finds its twin in the same gap)."""
    used = {j for j in out if j is not None}
    i = 0
    prev_j = -1
    n = len(a)
    while i < n:
        matched = out[i]
        if matched is not None:
            prev_j = matched
            i += 1
            continue
        start = i
        while i < n and out[i] is None:
            i += 1
        stop = out[i] if i < n else None  # the next match (the loop above stopped at it), else the end of b
        next_j = len(b) if stop is None else stop
        free = _positions([b[j] if j not in used else "\0used" for j in range(prev_j + 1, next_j)])
        for k in range(start, i):
            js = free.get(a[k])
            if js:
                j = prev_j + 1 + js.pop(0)
                out[k] = j
                used.add(j)


# One profiled event: (name, cat, duration in µs), as torch.profiler's chrome trace has them.
Event = tuple[str, str, float]


@dataclass(frozen=True)
class ReplayTimes:
    """GPU time of each timed node over several profiled replays of one graph."""

    node_us: dict[int, float]  # node id -> median µs over the replays in which the node matched an event
    replays: int
    replay_us: float  # median over the replays of the summed durations of their events (busy GPU time)
    unmatched_events: int  # most events of one replay that matched no node
    unmatched_nodes: int  # timed nodes that matched no event in any replay

    @property
    def timed_us(self) -> float:
        return sum(self.node_us.values())


def replay_times(graph: Graph, replays: Sequence[Sequence[Event]]) -> ReplayTimes:
    """Match each replay's events (in GPU start order) to the graph's timed nodes and take the median per node."""
    nodes = timed_nodes(graph)
    keys = [node_key(n) for n in nodes]
    samples: dict[int, list[float]] = defaultdict(list)
    worst = 0
    for events in replays:
        got = match(keys, [event_key(name, cat) for name, cat, _ in events])
        for node, j in zip(nodes, got):
            if j is not None:
                samples[node.id].append(float(events[j][2]))
        worst = max(worst, len(events) - sum(1 for j in got if j is not None))
    busy = [sum(float(e[2]) for e in events) for events in replays]
    return ReplayTimes(node_us={i: median(v) for i, v in sorted(samples.items())}, replays=len(replays),
                       replay_us=median(busy) if busy else 0.0, unmatched_events=worst,
                       unmatched_nodes=sum(1 for n in nodes if n.id not in samples))


def eager_sources(graph: Graph, kernels: Sequence[tuple[str, str, int]]) -> dict[int, int]:
    """Node id -> the index of the eager op that launched the same kernel, from one profiled eager step's kernels
    (name, cat, op index or -1) in GPU order: for graphs whose capture cgtool did not watch (torch.compile's)."""
    nodes = timed_nodes(graph)
    got = match([node_key(n) for n in nodes], [event_key(name, cat) for name, cat, _ in kernels])
    return {n.id: kernels[j][2] for n, j in zip(nodes, got) if j is not None and kernels[j][2] >= 0}
