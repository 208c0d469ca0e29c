"""Lines whose GPU work takes longer in replay than in eager (report.json `node_lines.replay_slower_lines`,
docs/node-lines.md): a graph replays the kernels its capture launched, and a library can launch other kernels
while capturing than it does eagerly (cuDNN or cuBLAS choosing another algorithm under capture: on wav2vec2 the
positional convolution took 199 µs in replay against 85 µs eager on an H100).

Per line (as the capture table groups lines), eager GPU time is the time of one profiled eager step's kernels on
that line, replay GPU time the median time of its nodes over the profiled replays. Eager kernels are given lines
through the same match of kernels to graph nodes the launch-bound table uses (kernel identity and order,
graph/node_align.py); where the sides ran different kernels (between two matched pairs), that stretch counts on
both sides for the line with most replay time in it (`slower_lines`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cgtool.graph.model import Graph
from cgtool.graph.names import short_name
from cgtool.graph.node_align import event_key, match, node_key, timed_nodes
from cgtool.model.codec import Record, meta, rounded

RATIO = 1.3  # replay at least this many times eager's GPU time on the line ...
MIN_US = 10.0  # ... and at least this many µs more: one profiled eager step against the median of 5 replays

OTHER_KERNELS = "other kernels"  # SlowerLine.cause: the capture launched other kernels than eager does
SAME_KERNELS = "same kernels"  # the same kernels ran longer in replay


@dataclass(frozen=True)
class SlowerLine(Record):
    """A line whose replay GPU time exceeds its eager GPU time beyond noise (RATIO and MIN_US), the kernels only
    one side ran there (short names, each once, in order; none when the same kernels ran longer), the other lines
    the stretch where they differ spans, and the likely cause."""

    JSON_ORDER = ("frame", "eager_us", "replay_us", "eager_kernels", "replay_kernels", "spans", "cause")
    JSON_COMPUTED = {"cause": lambda line: line.cause}

    frame: int  # index into NodeProfile.frames
    eager_us: float = field(metadata=meta(write=rounded(3)))
    replay_us: float = field(metadata=meta(write=rounded(3)))
    eager_kernels: tuple[str, ...]  # eager's kernels that replay does not run here
    replay_kernels: tuple[str, ...]  # replay's kernels that eager does not run here
    spans: tuple[int, ...] = ()  # other lines (frame indexes) inside the stretch of differing kernels

    @property
    def cause(self) -> str:
        return SAME_KERNELS if not self.eager_kernels and not self.replay_kernels else OTHER_KERNELS

    def explain(self) -> str:
        """The likely cause, in a sentence."""
        if self.cause == SAME_KERNELS:
            return ("the same kernels ran longer in replay (not an algorithm choice: their inputs' placement in the "
                    "graph's pool, or work running beside them)")
        return (f"replay runs other kernels ({_few(self.replay_kernels)}) than eager ({_few(self.eager_kernels)}): "
                "code took another path while capturing (a library that checks "
                "torch.cuda.is_current_stream_capturing(), or cuDNN/cuBLAS choosing another algorithm)")


def slower_lines(profile: Any, graph: Graph, kernels: Sequence[tuple[str, str, float, int]],
                 ratio: float = RATIO, min_us: float = MIN_US) -> list[SlowerLine]:
    """The lines slower in replay than in one profiled eager step (`kernels`: name, cat, µs, op, in GPU order),
    most extra time first, by each line's eager and replay GPU time as `line_times` attributes them.
    `profile`: the NodeProfile (cgtool/model/node_profile.py, which imports this module)."""
    out = []
    for line, r in line_times(profile, graph, kernels).items():
        if r.eager_us > 0 and r.replay_us >= ratio * r.eager_us and r.replay_us - r.eager_us >= min_us:
            out.append(SlowerLine(line, r.eager_us, r.replay_us, _once(r.eager_names), _once(r.replay_names),
                                  tuple(sorted(r.spans))))
    return sorted(out, key=lambda s: -(s.replay_us - s.eager_us))


def line_times(profile: Any, graph: Graph, kernels: Sequence[tuple[str, str, float, int]]) -> dict[int, LineTime]:
    """Each line's GPU time in one profiled eager step and in replay (the median node times), both over the same
    stretches of the step, so that the two can be compared (the launch-bound table and the slower lines use it).

    Matched pairs (the same kernel both sides) count for the node's line on both sides. Between two consecutive
    matched pairs, the unmatched nodes and the unmatched eager kernels are one gap, the place where the two sides
    ran different kernels; a gap counts wholly (both sides) for the line of most replay time among its nodes, and
    names the other lines it spans; eager kernels where replay has no node count for the line of the matched node
    before them. So each side's time on a line covers the same stretch of the step, and every eager kernel after
    the first match has a line. The matched pairs of a line are in `pairs` (node index, kernel index)."""
    nodes = timed_nodes(graph)
    got = match([node_key(n) for n in nodes], [event_key(name, cat) for name, cat, _, _ in kernels])
    source = {n.node: (n.lib if n.lib >= 0 else n.frame, n.us or 0.0) for n in profile.nodes}
    lines = [source.get(n.id, (-1, 0.0))[0] for n in nodes]
    node_us = [source.get(n.id, (-1, 0.0))[1] for n in nodes]
    rows: dict[int, LineTime] = {}

    def row(line: int) -> LineTime:
        return rows.setdefault(line, LineTime())

    for i, j in enumerate(got):
        if j is not None and lines[i] >= 0:
            row(lines[i]).add(kernels[j][2], node_us[i], (), ())
            row(lines[i]).kernels.append(j)
    for gap_nodes, gap_kernels, before in _gaps(got, len(kernels)):
        replay_by: dict[int, float] = {}
        for i in gap_nodes:
            if lines[i] >= 0:
                replay_by[lines[i]] = replay_by.get(lines[i], 0.0) + node_us[i]
        if not replay_by:  # eager kernels where replay has no node: the line of the matched node before them
            if before >= 0 and lines[before] >= 0:
                row(lines[before]).add(sum(kernels[j][2] for j in gap_kernels), 0.0,
                                       [short_name(kernels[j][0], 50) for j in gap_kernels], ())
                row(lines[before]).kernels.extend(gap_kernels)
            continue
        main = max(replay_by, key=lambda k: (replay_by[k], -k))
        row(main).add(sum(kernels[j][2] for j in gap_kernels), sum(replay_by.values()),
                      [short_name(kernels[j][0], 50) for j in gap_kernels],
                      [short_name(_name(nodes[i]), 50) for i in gap_nodes if lines[i] >= 0])
        row(main).kernels.extend(gap_kernels)
        row(main).spans.update(k for k in replay_by if k != main)
    return rows


@dataclass
class LineTime:
    """One line's GPU time eager and in replay over the same stretches of the step (line_times)."""

    eager_us: float = 0.0
    replay_us: float = 0.0
    eager_names: list[str] = field(default_factory=list)  # the kernels only one side ran (gaps)
    replay_names: list[str] = field(default_factory=list)
    spans: set[int] = field(default_factory=set)
    kernels: list[int] = field(default_factory=list)  # the eager kernels (indexes) counted on this line

    def add(self, eager_us: float, replay_us: float, eager_names: Sequence[str], replay_names: Sequence[str]) -> None:
        self.eager_us += eager_us
        self.replay_us += replay_us
        self.eager_names += eager_names
        self.replay_names += replay_names


def _name(node: Any) -> str:
    return str(node.demangled or node.mangled or node.name)


def _gaps(got: Sequence[int | None], n_kernels: int) -> list[tuple[list[int], list[int], int]]:
    """(unmatched nodes, unmatched eager kernels, the matched node before them or -1) between each two consecutive
    matched pairs (in eager order), where either side has any."""
    pairs = sorted((j, i) for i, j in enumerate(got) if j is not None)
    anchors = [(-1, -1), *pairs, (n_kernels, len(got))]
    out = []
    for (j0, i0), (j1, i1) in zip(anchors, anchors[1:]):
        gap_kernels = list(range(j0 + 1, j1))  # between consecutive matched kernels: all unmatched
        gap_nodes = [i for i in range(max(i0 + 1, 0), i1) if got[i] is None]
        if gap_kernels or gap_nodes:
            out.append((gap_nodes, gap_kernels, i0))
    return out


def _once(names: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


def _few(names: Sequence[str], limit: int = 4) -> str:
    if not names:
        return "none"
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


__all__ = ["OTHER_KERNELS", "SAME_KERNELS", "SlowerLine", "slower_lines"]
