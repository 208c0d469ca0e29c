"""Streams during capture: work on the default stream (CG202), on a stream not forked from the capturing
stream (CG201), and side streams forked but not joined back (CG203).

GPU run: each op of the capture iteration carries is_current_stream_capturing(). CPU run: the stand-ins
record stream calls, and this module replays them with the ops in order, with CUDA's rules: a stream joins
the capture when it waits on a capturing stream (or on an event recorded on one), and every stream that
joined must be waited on by the capturing stream after its last work.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cgtool.checks.common import capture_iterations, finding_at, quote
from cgtool.model.finding import Finding
from cgtool.model.rules import RULE_BY_ID, UNCAPTURED_WAIT
from cgtool.model.trace import Iteration, StreamEvent, Trace


@dataclass
class _Capture:
    """The capture's stream DAG as far as replayed: who joined, what each stream has waited for."""

    origin: int
    forked: dict[int, int] = field(default_factory=dict)  # stream -> frame of its fork (origin: -1)
    version: dict[int, int] = field(default_factory=dict)  # stream -> activity count (fork, work)
    seen: dict[int, dict[int, int]] = field(default_factory=dict)  # stream -> {stream: version waited for}
    events: dict[int, tuple[int, dict[int, int]]] = field(default_factory=dict)  # event -> (stream, snapshot)
    last_work: dict[int, int] = field(default_factory=dict)  # stream -> frame of its last op

    def __post_init__(self) -> None:
        self.forked[self.origin] = -1

    def snapshot(self, stream: int) -> dict[int, int]:
        return {**self.seen.get(stream, {}), stream: self.version.get(stream, 0)}

    def wait(self, waiter: int, snapshot: dict[int, int], source: int, frame: int) -> None:
        if source in self.forked and waiter not in self.forked:
            self.forked[waiter] = frame
            self.version[waiter] = self.version.get(waiter, 0) + 1  # a fork must be joined even without work
        seen = self.seen.setdefault(waiter, {})
        for s, v in snapshot.items():
            if v > seen.get(s, -1):
                seen[s] = v

    def unjoined(self) -> list[int]:
        seen = self.seen.get(self.origin, {})
        return [s for s in self.forked if s != self.origin and seen.get(s, -1) < self.version.get(s, 0)]


def check_streams(trace: Trace) -> list[Finding]:
    out: list[Finding] = []
    events_of: dict[int, list[StreamEvent]] = {}
    for ev in trace.events:
        events_of.setdefault(ev.iteration, []).append(ev)
    for it in capture_iterations(trace):
        evs = events_of.get(it.index, [])
        if trace.virtual_cuda:
            origin = trace.capture_stream if trace.capture_stream is not None else 1
            out += _replay(trace, it, evs, origin, gpu=False)
        elif it.phase == "capture":
            first = next((op for op in it.ops if op.capturing and op.frame >= 0), None)
            capturing = it.stream if it.stream is not None else (first.stream if first is not None else None)
            if capturing is not None:
                out += _replay(trace, it, evs, capturing, gpu=True)
    return out


def _replay(trace: Trace, it: Iteration, evs: list[StreamEvent], origin: int, gpu: bool) -> list[Finding]:
    """Replay the iteration's stream calls and ops in order. Work outside the capture: on the GPU an op
    that was not capturing (from the first capturing op on), on the CPU an op on a stream that has not
    joined the capture. Unjoined: a stream forked by a recorded wait, not waited on after its last work."""
    cap = _Capture(origin)
    out: list[Finding] = []
    flagged: set[int] = set()
    ei = 0
    started = not gpu
    for pos in range(len(it.ops) + 1):
        while ei < len(evs) and evs[ei].position <= pos:
            out += _apply(trace, cap, evs[ei], flagged)
            ei += 1
        if pos == len(it.ops):
            break
        op = it.ops[pos]
        started = started or bool(op.capturing)
        if op.host or op.stream is None or op.frame < 0 or not started:
            continue  # host work, or the harness's own ops (torch.cuda.graph's set-up)
        outside = op.capturing is False if gpu else op.stream not in cap.forked
        if not outside:
            if op.stream in cap.forked:
                cap.version[op.stream] = cap.version.get(op.stream, 0) + 1
                cap.last_work[op.stream] = op.frame
        elif op.stream not in flagged:
            flagged.add(op.stream)
            out += _uncaptured(trace, op.stream, op.frame, op.name, _switch_frame(evs[:ei], op.stream))
    if it.error is None or (gpu and "unjoined" in it.error):  # a step that raised may have joined later
        for s in cap.unjoined():
            work = cap.last_work.get(s)
            tail = f"; its last work is at {quote(trace, work)}" if work is not None else ""
            out.append(finding_at(trace, "CG203", cap.forked[s], f"side stream {s} forked here is not joined back "
                                  f"to the capturing stream before the step returns{tail} (capture fails: "
                                  f"`{RULE_BY_ID['CG203'].capture_error}`)"))
    return out


def _apply(trace: Trace, cap: _Capture, ev: StreamEvent, flagged: set[int]) -> list[Finding]:
    if ev.kind == "record-event" and ev.stream is not None and ev.target is not None:
        cap.events[ev.target] = (ev.stream, cap.snapshot(ev.stream))
    elif ev.kind == "wait-stream" and ev.stream is not None and ev.target is not None:
        return _wait(trace, cap, ev, ev.target, cap.snapshot(ev.target), flagged)
    elif ev.kind == "wait-event" and ev.stream is not None and ev.target in cap.events:
        source, snap = cap.events[ev.target]
        return _wait(trace, cap, ev, source, snap, flagged)
    return []


def _wait(trace: Trace, cap: _Capture, ev: StreamEvent, source: int, snap: dict[int, int],
          flagged: set[int]) -> list[Finding]:
    assert ev.stream is not None
    if ev.stream in cap.forked and source not in cap.forked and source in _worked(trace, ev):
        if source in flagged:
            return []
        flagged.add(source)
        return [finding_at(trace, "CG201", ev.frame, f"the capturing stream waits here on stream {source}, whose "
                           "work was not captured (capture fails: dependency on uncaptured work)",
                           kind=UNCAPTURED_WAIT)]
    cap.wait(ev.stream, snap, source, ev.frame)
    return []


def _worked(trace: Trace, ev: StreamEvent) -> set[int]:
    it = next((i for i in trace.iterations if i.index == ev.iteration), None)
    return {op.stream for op in (it.ops[:ev.position] if it else [])
            if op.stream is not None and not op.host and op.frame >= 0}


def _switch_frame(evs: list[StreamEvent], stream: int | None) -> int | None:
    for ev in reversed(evs):
        if ev.kind == "switch" and ev.stream == stream:
            return ev.frame
    return None


def _uncaptured(trace: Trace, stream: int | None, frame: int, name: str, switch: int | None) -> list[Finding]:
    """Findings for work on a stream outside the capture: at the op, and at the switch to that stream."""
    default = stream == (trace.default_stream if trace.default_stream is not None else 0)
    rule = "CG202" if default else "CG201"
    where = "the default stream" if default else f"stream {stream}, which was not forked from the capturing stream"
    out = [finding_at(trace, rule, frame, f"`{name}` runs on {where}: it runs once, at capture, and is left out "
                      "of the graph")]
    if switch is not None and switch != frame:
        what = "switches to the default stream" if default else \
            f"switches to stream {stream} without forking it (`s.wait_stream(torch.cuda.current_stream())`)"
        out.append(finding_at(trace, rule, switch, f"the step {what}; the work under it, at {quote(trace, frame)}, "
                              "is left out of the graph"))
    return out
