"""The profiled replays and eager step, event by event (report.json `node_lines.timeline`): what `timeline.json`
is written from (cgtool/render/timeline.py), each GPU event tied to the graph node it ran, so the node's line and
module name it (docs/node-lines.md, "Timeline")."""

from __future__ import annotations

from dataclasses import dataclass
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


class Timeline:
    """Every event of the profiled replays and of the profiled eager step, in start order per side.

    Read from report.json it stays in its compact form until `slices` is asked for: a 3,000-node graph's five
    replays are 15,000 events, and reading and writing a report (every `cgtool dot`, `report`, the parent's copy of
    the worker's report) should not build an object per event it never looks at."""

    def __init__(self, slices: list[Slice] | None = None, compact: dict[str, Any] | None = None) -> None:
        self._slices = slices if slices is not None or compact is not None else []
        self._compact = compact

    @property
    def slices(self) -> list[Slice]:
        if self._slices is None:
            d = self._compact or {}
            names = list(d.get("names", ()))
            if not isinstance(d.get("events", []), list):  # named timeline.json instead: no events here
                d = {}
            self._slices = [Slice(str(side), names[int(n)], str(cat), float(ts), float(dur), int(lane), int(node),
                                  int(run)) for side, n, cat, ts, dur, lane, node, run in d.get("events", ())]
        return self._slices

    def side(self, side: str) -> list[Slice]:
        return [s for s in self.slices if s.side == side]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Timeline) and self.slices == other.slices

    def __repr__(self) -> str:
        return f"Timeline({len(self.slices)} events)"

    def to_json(self) -> dict[str, Any]:
        """Compact: names once in `names`; each event [side, name index, cat, ts, dur, lane, node, run]."""
        if self._slices is None and self._compact is not None:
            return self._compact  # as read: never decoded, never changed
        names: dict[str, int] = {}
        rows = [[s.side, names.setdefault(s.name, len(names)), s.cat, round(s.ts, 3), round(s.dur, 3), s.lane,
                 s.node, s.run] for s in self.slices]
        return {"names": list(names), "events": rows}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Timeline:
        """The compact form; a report.json written beside timeline.json names that file instead (`file`, `events`:
        the count) and holds no events (render/outputs.py)."""
        events = d.get("events")
        if not isinstance(events, list):
            return cls(compact=dict(d))
        return cls(compact={"names": list(d.get("names", ())), "events": events})
