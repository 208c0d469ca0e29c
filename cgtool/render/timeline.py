"""`timeline.json`: the profiled replays and the profiled eager step of a capture as a Chrome trace (the Trace
Event Format's JSON object: `traceEvents` of complete events, ph "X", ts/dur in µs), which Perfetto
(ui.perfetto.dev) and chrome://tracing open. Each GPU event is named by the graph node it ran, its line and its
module (`node 12 · train.py:31 (linear.py:134) · model.layers.0.mlp · aten.addmm.default · sm90_xmma_gemm...`), with the full record in `args`; the CPU shows
each replay's graph launch and, in eager, the aten ops that launched the kernels. A plain renderer over
report.json's `node_lines` (docs/node-lines.md)."""

from __future__ import annotations

import json
import os
from typing import Any

from cgtool.graph.names import short_name
from cgtool.model.node_profile import NodeProfile, NodeSource
from cgtool.model.report import Report
from cgtool.model.timeline import EAGER, REPLAY, Slice, Timeline

PIDS = {REPLAY: 1, EAGER: 2}
PROCESS_NAMES = {REPLAY: "CUDA graph replays (profiled)", EAGER: "eager step (profiled)"}
GPU_TID = 1_000_000  # GPU stream s is thread GPU_TID + s: after every CPU thread in Perfetto's order


def has_timeline(report: Report) -> bool:
    lines = report.node_lines
    return lines is not None and lines.timeline is not None and bool(lines.timeline.slices)


def render_timeline(report: Report) -> str:
    """The trace as JSON text; the report must have a timeline (has_timeline)."""
    profile = report.node_lines
    if profile is None or profile.timeline is None:
        raise ValueError("the report has no timeline (node_lines.timeline): nothing was profiled")
    return json.dumps(trace_events(report, profile, profile.timeline), indent=None, separators=(",", ":")) + "\n"


def trace_events(report: Report, profile: NodeProfile, timeline: Timeline) -> dict[str, Any]:
    """The Trace Event Format object: metadata events naming processes and threads, then one complete event per
    slice."""
    sources = {n.node: n for n in profile.nodes}
    kernels = {n.id: n for n in report.graph.nodes} if report.graph is not None else {}
    events: list[dict[str, Any]] = []
    lanes: set[tuple[str, int, bool]] = set()
    for s in timeline.slices:
        lanes.add((s.side, s.lane, s.on_gpu))
        events.append(_event(s, profile, sources.get(s.node), kernels.get(s.node)))
    meta: list[dict[str, Any]] = []
    for side in sorted({side for side, _, _ in lanes}, key=lambda side: PIDS[side]):
        pid = PIDS[side]
        meta.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": PROCESS_NAMES[side]}})
        meta.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        for _, lane, gpu in sorted(lane for lane in lanes if lane[0] == side):
            tid = _tid(lane, gpu)
            label = f"GPU stream {lane}" if gpu else (f"CPU thread {lane}: graph launches" if side == REPLAY
                                                       else f"CPU thread {lane}: aten ops")
            meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": label}})
            meta.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}})
    return {"traceEvents": meta + events, "displayTimeUnit": "ns",
            "otherData": {"tool": f"cgtool {report.cgtool_version}".strip(), "script": report.script,
                          "entry": report.entry, "replays": profile.replays,
                          "replay_us": round(profile.replay_us, 3), "graph_nodes": len(kernels)}}


def _tid(lane: int, gpu: bool) -> int:
    return GPU_TID + lane if gpu else lane


def _event(s: Slice, profile: NodeProfile, source: NodeSource | None, node: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"name": s.name, "category": s.cat}
    if s.side == REPLAY:
        args["replay"] = s.run + 1
    if s.node >= 0:
        args["node"] = s.node
        if node is not None:
            args["node kind"] = node.kind
    if source is not None:
        if source.frame >= 0:
            f = profile.frames[source.frame]
            args.update({"line": f"{f.file}:{f.line}", "function": f.function, "source": f.source.strip()})
        if source.lib >= 0:
            f = profile.frames[source.lib]
            args["library line"] = f"{f.file}:{f.line}"
        if source.module:
            args["module"] = source.module
        if source.op:
            args["op"] = source.op
        if source.us is not None and s.on_gpu:
            args["median µs in replay"] = round(source.us, 3)
    return {"ph": "X", "name": _name(s, profile, source), "cat": s.cat, "ts": round(s.ts, 3),
            "dur": round(max(s.dur, 0.0), 3), "pid": PIDS[s.side], "tid": _tid(s.lane, s.on_gpu), "args": args}


def _name(s: Slice, profile: NodeProfile, source: NodeSource | None) -> str:
    """A GPU event: `node N · train.py:L (linear.py:L) · module · op · kernel` (what is known of it: the user's line,
    then the library's that issued the op); an aten op: its name, the line and module of the first kernel it
    launched; a graph launch: `replay k: cudaGraphLaunch`."""
    if s.side == REPLAY and not s.on_gpu:
        return f"replay {s.run + 1}: {s.name}"
    where = []
    if source is not None and (source.frame >= 0 or source.lib >= 0):  # the user's line (the library's that issued it)
        lines = [profile.frames[i] for i in (source.frame, source.lib) if i >= 0]
        shown = [f"{os.path.basename(f.file)}:{f.line}" for f in lines]
        where.append(shown[0] + (f" ({shown[1]})" if len(shown) > 1 else ""))
    if source is not None and source.module:
        where.append(source.module)
    if not s.on_gpu:
        return " · ".join([s.name, *where])
    if s.node < 0:
        return short_name(s.name)
    what = [source.op] if source is not None and source.op else []
    return " · ".join([f"node {s.node}", *where, *what, short_name(s.name)])
