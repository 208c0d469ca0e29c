"""Order and shape of a graph's dependencies: adjacency, a stable topological order, dependency levels."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from cgtool.graph.model import Graph


@dataclass(frozen=True)
class Adjacency:
    succ: tuple[tuple[int, ...], ...]  # node id -> ids that depend on it
    pred: tuple[tuple[int, ...], ...]  # node id -> ids it depends on

    @classmethod
    def of(cls, graph: Graph) -> Adjacency:
        succ: list[list[int]] = [[] for _ in graph.nodes]
        pred: list[list[int]] = [[] for _ in graph.nodes]
        for a, b in graph.edges:
            succ[a].append(b)
            pred[b].append(a)
        return cls(tuple(map(tuple, succ)), tuple(map(tuple, pred)))


def topo_order(graph: Graph, adj: Adjacency, ids: list[int] | None = None) -> list[int]:
    """Kahn's order of `ids` (default: all nodes), ties broken by id so the order is stable.

    Nodes on a cycle (only a hand-edited file has one) come last, in id order.
    """
    ids = list(range(len(graph.nodes))) if ids is None else ids
    wanted = set(ids)
    indeg = {i: sum(1 for p in adj.pred[i] if p in wanted) for i in ids}
    ready = deque(sorted(i for i in ids if indeg[i] == 0))
    order: list[int] = []
    while ready:
        n = ready.popleft()
        order.append(n)
        for s in adj.succ[n]:
            if s in indeg:
                indeg[s] -= 1
                if indeg[s] == 0:
                    ready.append(s)
    if len(order) < len(ids):
        seen = set(order)
        order.extend(i for i in sorted(ids) if i not in seen)
    return order


def levels(order: list[int], adj: Adjacency) -> dict[int, int]:
    """Dependency level of each node in `order`: 1 for a root, else 1 + the deepest predecessor."""
    level: dict[int, int] = {}
    for n in order:
        level[n] = 1 + max((level[p] for p in adj.pred[n] if p in level), default=0)
    return level


def nodes_by_graph(graph: Graph) -> dict[int, list[int]]:
    """Node ids of each graph (0 = top level, then child graphs), in id order."""
    out: dict[int, list[int]] = {}
    for n in graph.nodes:
        out.setdefault(n.graph, []).append(n.id)
    return dict(sorted(out.items()))



def find_cycle(graph: Graph) -> list[int] | None:
    """A cycle as node ids, the first repeated at the end (`[3, 4, 3]`; a self-loop is `[5, 5]`), or None when there
    is none, as in every CUDA graph. A node is followed by the nodes its edges lead to and by the nodes of the child
    graphs it embeds (so child graphs embedding each other are a cycle too). Iterative depth-first search, O(nodes +
    edges): each graph is one extra vertex between its embedding nodes and its own nodes, left out of the answer."""
    n = len(graph.nodes)
    members = nodes_by_graph(graph)
    vertex = {g: n + k for k, g in enumerate(members)}  # graph id -> its extra vertex
    succ = [list(s) for s in Adjacency.of(graph).succ] + [members[g] for g in members]
    for node in graph.nodes:
        listed = node.attrs.get("bodies")
        bodies = listed if isinstance(listed, list) else [node.child]
        succ[node.id] += [vertex[c] for c in bodies if c in vertex]
    state = [0] * len(succ)  # 0 unseen, 1 on the current path, 2 done
    for root in range(n):
        if state[root]:
            continue
        path, nexts = [root], [iter(succ[root])]
        state[root] = 1
        while path:
            child = next(nexts[-1], None)
            if child is None:
                state[path.pop()] = 2
                nexts.pop()
            elif state[child] == 1:
                cycle = path[path.index(child):] + [child]
                return [v for v in cycle if v < n] if cycle[0] < n else [v for v in cycle[1:] if v < n] + [cycle[1]]
            elif state[child] == 0:
                state[child] = 1
                path.append(child)
                nexts.append(iter(succ[child]))
    return None
