"""Lines whose GPU work takes longer in replay than in eager (report.json `node_lines.replay_slower_lines`,
docs/node-lines.md): a graph replays the kernels its capture launched, and a library can launch other kernels
while capturing than it does eagerly (cuDNN or cuBLAS choosing another algorithm under capture: on wav2vec2 the
positional convolution took 199 µs in replay against 85 µs eager on an H100).

Per line (as the capture table groups lines), eager GPU time is the time of one profiled eager step's kernels on
that line, replay GPU time the median time of its nodes over the profiled replays. Eager kernels are given lines
through the same match of kernels to graph nodes the launch-bound table uses (kernel identity and order,
graph/node_align.py); an eager kernel that matched no node (another kernel than the graph holds) takes the line
of the unmatched nodes between the matches around it, when those nodes are all of one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cgtool.graph.model import Graph
from cgtool.graph.names import short_name
from cgtool.graph.node_align import event_key, match, node_key, timed_nodes

RATIO = 1.3  # replay at least this many times eager's GPU time on the line ...
MIN_US = 10.0  # ... and at least this many µs more: one profiled eager step against the median of 5 replays

OTHER_KERNELS = "other kernels"  # SlowerLine.cause: the capture launched other kernels than eager does
SAME_KERNELS = "same kernels"  # the same kernels ran longer in replay


@dataclass(frozen=True)
class SlowerLine:
    """A line whose replay GPU time exceeds its eager GPU time beyond noise (RATIO and MIN_US), with the kernels
    each side ran there (short names, each once, in order) and the likely cause."""

    frame: int  # index into NodeProfile.frames
    eager_us: float
    replay_us: float
    eager_kernels: tuple[str, ...]
    replay_kernels: tuple[str, ...]

    @property
    def cause(self) -> str:
        return SAME_KERNELS if sorted(self.eager_kernels) == sorted(self.replay_kernels) else OTHER_KERNELS

    def explain(self) -> str:
        """The likely cause, in a sentence."""
        if self.cause == SAME_KERNELS:
            return ("the same kernels ran longer in replay (not an algorithm choice: their inputs' placement in the "
                    "graph's pool, or work running beside them)")
        return (f"replay runs other kernels ({', '.join(self.replay_kernels) or 'none'}) than eager "
                f"({', '.join(self.eager_kernels) or 'none'}): the library chose another algorithm while capturing "
                "(cuDNN or cuBLAS heuristics see a capturing stream, or another workspace)")

    def to_json(self) -> dict[str, Any]:
        return {"frame": self.frame, "eager_us": round(self.eager_us, 3), "replay_us": round(self.replay_us, 3),
                "eager_kernels": list(self.eager_kernels), "replay_kernels": list(self.replay_kernels),
                "cause": self.cause}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SlowerLine:
        return cls(int(d["frame"]), float(d["eager_us"]), float(d["replay_us"]),
                   tuple(d.get("eager_kernels", ())), tuple(d.get("replay_kernels", ())))


def slower_lines(profile: Any, graph: Graph, kernels: Sequence[tuple[str, str, float, int]],
                 ratio: float = RATIO, min_us: float = MIN_US) -> list[SlowerLine]:
    """The lines slower in replay than in one profiled eager step (`kernels`: name, cat, µs, op, in GPU order),
    most extra time first. `profile`: the NodeProfile (cgtool/model/node_profile.py, which imports this module)."""
    nodes = timed_nodes(graph)
    got = match([node_key(n) for n in nodes], [event_key(name, cat) for name, cat, _, _ in kernels])
    source = {n.node: (n.lib if n.lib >= 0 else n.frame, n.us or 0.0) for n in profile.nodes}
    lines = [source.get(n.id, (-1, 0.0))[0] for n in nodes]
    owner: list[int] = [-1] * len(kernels)  # each eager kernel's line
    for i, j in enumerate(got):
        if j is not None:
            owner[j] = lines[i]
    for j, line in _gap_lines(got, lines, len(kernels)).items():
        owner[j] = line
    eager: dict[int, list[Any]] = {}
    replay: dict[int, list[Any]] = {}
    for j, (name, _cat, us, _op) in enumerate(kernels):
        if owner[j] >= 0:
            row = eager.setdefault(owner[j], [0.0, []])
            row[0] += us
            row[1].append(short_name(name, 50))
    for node, line in zip(nodes, lines):
        if line >= 0:
            row = replay.setdefault(line, [0.0, []])
            row[0] += source[node.id][1]
            row[1].append(short_name(node.demangled or node.mangled or node.name, 50))
    out = []
    for line, (r_us, r_names) in replay.items():
        e_us, e_names = eager.get(line, (0.0, []))
        if e_us > 0 and r_us >= ratio * e_us and r_us - e_us >= min_us:
            out.append(SlowerLine(line, e_us, r_us, _once(e_names), _once(r_names)))
    return sorted(out, key=lambda s: -(s.replay_us - s.eager_us))


def _gap_lines(got: Sequence[int | None], lines: Sequence[int], n_kernels: int) -> dict[int, int]:
    """Eager kernels that matched no node -> the line of the unmatched nodes between the matched pairs around
    them, where those nodes are all of one line (none where the gap holds no node or several lines)."""
    pairs = sorted((j, i) for i, j in enumerate(got) if j is not None)
    anchors = [(-1, -1), *pairs, (n_kernels, len(got))]
    matched = {j for j, _ in pairs}
    out: dict[int, int] = {}
    for (j0, i0), (j1, i1) in zip(anchors, anchors[1:]):
        gap = [j for j in range(j0 + 1, j1) if j not in matched]
        between = {lines[i] for i in range(max(i0 + 1, 0), max(i1, 0)) if got[i] is None}
        if gap and len(between) == 1 and -1 not in between:
            line = between.pop()
            for j in gap:
                out[j] = line
    return out


def _once(names: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


__all__ = ["OTHER_KERNELS", "SAME_KERNELS", "SlowerLine", "slower_lines"]
