"""The profiled replays and eager step, event by event (report.json `node_lines.timeline`): what `timeline.json`
is written from (cgtool/render/timeline.py), each GPU event tied to the graph node it ran, so the node's line and
module name it (docs/node-lines.md, "Timeline")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

REPLAY = "replay"  # Slice.side: the profiled graph.replay() loop
EAGER = "eager"  # one profiled eager step
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")  # the profiler's GPU event categories (the others are CPU)


@dataclass(frozen=True)
class Slice:
    """One profiled event: a kernel, memcpy or memset on a GPU stream, a graph launch or an aten op on a CPU thread.
    `ts` is µs from the first event of its side; `lane` the stream (GPU) or the thread (CPU); `node` the graph node a
    GPU event ran (replay) or matched (eager) and, for an aten op, the node of the first kernel it launched (-1:
    none); `run` which replay (0 for the eager step)."""

    side: str
    name: str
    cat: str
    ts: float
    dur: float
    lane: int = 0
    node: int = -1
    run: int = 0

    @property
    def on_gpu(self) -> bool:
        return self.cat in GPU_CATS


@dataclass
class Timeline:
    """Every event of the profiled replays and of the profiled eager step, in start order per side."""

    slices: list[Slice] = field(default_factory=list)

    def side(self, side: str) -> list[Slice]:
        return [s for s in self.slices if s.side == side]

    def to_json(self) -> dict[str, Any]:
        """Compact: names once in `names`; each event [side, name index, cat, ts, dur, lane, node, run]."""
        names: dict[str, int] = {}
        rows = [[s.side, names.setdefault(s.name, len(names)), s.cat, round(s.ts, 3), round(s.dur, 3), s.lane,
                 s.node, s.run] for s in self.slices]
        return {"names": list(names), "events": rows}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Timeline:
        names = list(d.get("names", ()))
        return cls([Slice(str(side), names[int(n)], str(cat), float(ts), float(dur), int(lane), int(node), int(run))
                    for side, n, cat, ts, dur, lane, node, run in d.get("events", ())])
