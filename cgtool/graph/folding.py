"""Find repeated structure: a block of nodes that recurs many times in a row, linked the same way each time.

A model of 1,000 identical layers captures as one block of kernels repeated ×1000. The summary reports
such runs and the renderer draws one block for the whole run. Only exact runs count: every copy has
the same node signatures and the same edges inside it and to the next copy, and nothing else enters
a copy after the first or leaves one before the last, so a folded run can be expanded back exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

from cgtool.graph.model import Graph, GraphNode
from cgtool.graph.topology import Adjacency, nodes_by_graph, topo_order

MIN_COUNT = 3  # fewer copies than this are not worth folding
MAX_PERIOD = 64  # longest block searched for, in nodes


@dataclass(frozen=True)
class Repeat:
    """`count` consecutive copies of a block of `period` nodes in graph `graph`."""

    graph: int
    period: int
    members: tuple[int, ...]  # node ids, block after block; the first `period` are the first copy

    @property
    def count(self) -> int:
        return len(self.members) // self.period

    @property
    def first_block(self) -> tuple[int, ...]:
        return self.members[: self.period]

    def block(self, k: int) -> tuple[int, ...]:
        return self.members[k * self.period : (k + 1) * self.period]


def signature(node: GraphNode) -> tuple[object, ...]:
    """What must match for two nodes to count as the same step (ids and attrs may differ)."""
    return (node.kind, node.name, node.mangled, node.grid, node.block, node.shared_mem,
            node.copy_kind, node.bytes, node.child is not None)


def find_repeats(graph: Graph, adj: Adjacency | None = None, min_count: int = MIN_COUNT,
                 max_period: int = MAX_PERIOD) -> list[Repeat]:
    """Every maximal exact run of ≥ min_count copies, in each graph, in topological order."""
    adj = adj or Adjacency.of(graph)
    out: list[Repeat] = []
    for gid, ids in nodes_by_graph(graph).items():
        order = topo_order(graph, adj, ids)
        codes: dict[tuple[object, ...], int] = {}
        seq = []
        for n in order:
            node = graph.nodes[n]
            # A child-graph node embeds its own graph: never the same step as another one.
            key = ("child", n) if node.child is not None else signature(node)
            seq.append(codes.setdefault(key, len(codes)))
        for start, period, count in _tandem_runs(seq, min_count, max_period):
            out.extend(_exact_runs(gid, order, start, period, count, adj, min_count))
    return out


def _tandem_runs(seq: list[int], min_count: int, max_period: int) -> list[tuple[int, int, int]]:
    """(start, period, count) of runs where seq[start:start+period] repeats ≥ min_count times."""
    runs = []
    n, i = len(seq), 0
    while i < n:
        best = None  # (covered, -period, count)
        for p in range(1, min(max_period, (n - i) // min_count) + 1):
            if seq[i + p] != seq[i]:
                continue
            j = i + p
            while j < n and seq[j] == seq[j - p]:
                j += 1
            count = (j - i) // p
            if count >= min_count and (best is None or (count * p, -p) > best[:2]):
                best = (count * p, -p, count)
        if best is None:
            i += 1
            continue
        runs.append((i, -best[1], best[2]))
        i += best[0]
    return runs


def _exact_runs(gid: int, order: list[int], start: int, period: int, count: int,
                adj: Adjacency, min_count: int) -> list[Repeat]:
    """Split a run of equal signatures into the stretches whose copies are also wired alike."""
    pos = {n: k for k, n in enumerate(order[start : start + period * count])}
    blocks = [_wiring(order, start, period, k, pos, adj) for k in range(count)]
    out: list[Repeat] = []
    a = 0
    for k in range(count):
        internal, forward, leaves_early, enters_late = blocks[k]
        ok_with_prev = k > a and internal == blocks[a][0] and not enters_late and blocks[k - 1][2] == 0
        ok_with_prev = ok_with_prev and bool(blocks[a][1]) and blocks[k - 1][1] == blocks[a][1]
        if k > a and not ok_with_prev:
            out.extend(_emit(gid, order, start, period, a, k, min_count))
            a = k
    out.extend(_emit(gid, order, start, period, a, count, min_count))
    return out


def _emit(gid: int, order: list[int], start: int, period: int, a: int, b: int, min_count: int) -> list[Repeat]:
    if b - a < min_count:
        return []
    return [Repeat(gid, period, tuple(order[start + a * period : start + b * period]))]


def _wiring(order: list[int], start: int, period: int, k: int, pos: dict[int, int],
            adj: Adjacency) -> tuple[list[tuple[int, int]], list[tuple[int, int]], int, bool]:
    """Block k's edges: (inside it, to block k+1, how many go elsewhere, whether any arrive from
    somewhere other than block k-1), with positions relative to the block."""
    base = k * period
    internal: list[tuple[int, int]] = []
    forward: list[tuple[int, int]] = []
    elsewhere, enters = 0, False
    for n in order[start + base : start + base + period]:
        u = pos[n] - base
        for s in adj.succ[n]:
            v = pos.get(s, -1) - base
            if 0 <= v < period:
                internal.append((u, v))
            elif period <= v < 2 * period:
                forward.append((u, v - period))
            else:
                elsewhere += 1
        for p in adj.pred[n]:
            v = pos.get(p, -1) - base
            if not -period <= v < period:
                enters = True
    return sorted(internal), sorted(forward), elsewhere, enters
