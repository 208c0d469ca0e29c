"""Which line of the user's code each graph node came from, and its GPU time in replay (report.json `node_lines`,
docs/node-lines.md): the records, their JSON, and the totals per line, per library line and per module."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from cgtool.graph.model import Graph
from cgtool.graph.node_align import ReplayTimes, timed_nodes
from cgtool.model.codec import Record, is_empty, is_negative, is_none, meta, rounded
from cgtool.model.frame import Frame
from cgtool.model.replay_slower import SlowerLine, line_times
from cgtool.model.timeline import Timeline
from cgtool.model.trace import OpRecord

CAPTURE = "capture"  # NodeSource.how: the node count of the capturing graph around each traced op (exact)
INDUCTOR = "inductor"  # the launch in inductor's generated code, its FX node's stack from inductor's line map
NOT_MAPPED = "not mapped"

# Why a node has no line (NodeProfile.unmapped keys)
OUTSIDE_OPS = "made outside any traced op (a CUDA call from Python, or the capture's own)"
UNTRACED_OP = "made by an op the tracer did not record (no user frame)"
NO_LAUNCH = "no launch of inductor's generated code matched it (code outside the compiled graphs)"
NO_STACK = "inductor's line map kept no user frame for its FX node (torch.nn's own forward, e.g. nn.Sequential)"

GROUPS = ("line", "source", "module")  # NodeProfile.totals(by=...)


@dataclass(frozen=True)
class NodeSource(Record):
    """One node: the op that made it, the user's line (`frame`), the library line that issued the op (`lib`),
    the innermost running module, how that was found, and its median GPU time in replay (None: not timed)."""

    JSON_ORDER = ("node", "how", "op", "module", "frame", "lib", "us")

    node: int
    op: str = field(default="", metadata=meta(omit=is_empty))
    frame: int = field(default=-1, metadata=meta(omit=is_negative))  # index into NodeProfile.frames
    lib: int = field(default=-1, metadata=meta(omit=is_negative))
    module: str = field(default="", metadata=meta(omit=is_empty))
    how: str = NOT_MAPPED
    us: float | None = field(default=None, metadata=meta(omit=is_none, write=rounded(3)))


@dataclass(frozen=True)
class LineTotal:
    """One row of a summary: a line (frame index) or a module path, its nodes, kernels and replay GPU time."""

    key: str  # "file:line" or the module path ("" for nodes outside every module)
    frame: int  # index into NodeProfile.frames, -1 for a module row
    nodes: int
    kernels: int
    us: float
    share: float  # of NodeProfile.timed_us


@dataclass(frozen=True)
class EagerLine(Record):
    """A line whose eager time was mostly launch overhead: the CPU time of the aten ops that launched its kernels
    in one profiled eager step passed their GPU time; `replay_us` is its nodes' GPU time in replay."""

    frame: int  # index into NodeProfile.frames (the library's line where a library issued the op)
    cpu_us: float = field(metadata=meta(write=rounded(3)))
    gpu_us: float = field(metadata=meta(write=rounded(3)))
    replay_us: float = field(metadata=meta(write=rounded(3)))


@dataclass
class NodeProfile(Record):
    JSON_ORDER = ("frames", "nodes", "unmapped", "replays", "replay_us", "timed_us", "unmatched_events", "kernels",
                  "kernels_mapped", "eager_lines", "replay_slower_lines", "timeline")
    JSON_COMPUTED = {"timed_us": lambda p: round(p.timed_us, 3)}

    frames: list[Frame] = field(default_factory=list)
    nodes: list[NodeSource] = field(default_factory=list)
    unmapped: dict[str, int] = field(default_factory=dict)  # reason -> timed nodes without a line
    replays: int = 0
    # median busy GPU time of one replay (its events' durations summed)
    replay_us: float = field(default=0.0, metadata=meta(write=rounded(3)))
    unmatched_events: int = 0
    kernels: int = 0  # kernel nodes of the graph
    kernels_mapped: int = 0  # of them, with a user line
    # launch-bound lines, most CPU time over replay first
    eager: list[EagerLine] = field(default_factory=list, metadata=meta(key="eager_lines"))
    # the profiled replays and eager step, event by event (timeline.json)
    timeline: Timeline | None = field(default=None, metadata=meta(omit=is_none))
    # lines slower in replay than eager (model/replay_slower.py)
    slower: list[SlowerLine] = field(default_factory=list, metadata=meta(key="replay_slower_lines"))

    @property
    def timed_us(self) -> float:
        return sum(n.us for n in self.nodes if n.us is not None)

    def totals(self, by: str = "line", kinds: dict[int, str] | None = None) -> list[LineTotal]:
        """Time per user line (`line`), per issuing line, the library's where a library issued the op (`source`),
        or per module (`module`), most time first. `kinds`: node id -> kind, to count kernels."""
        if by not in GROUPS:
            raise ValueError(f"totals by {by!r}: expected one of {', '.join(GROUPS)}")
        acc: dict[tuple[str, int], list[float]] = {}
        for n in self.nodes:
            if by == "module":
                key = (n.module, -1)
            else:
                f = n.lib if by == "source" and n.lib >= 0 else n.frame
                if f < 0:
                    continue
                key = (self.where(f), f)
            row = acc.setdefault(key, [0, 0, 0.0])
            row[0] += 1
            row[1] += 1 if kinds is None or kinds.get(n.node) == "kernel" else 0
            row[2] += n.us or 0.0
        total = self.timed_us or 1.0
        rows = [LineTotal(k, f, int(r[0]), int(r[1]), r[2], r[2] / total) for (k, f), r in acc.items()]
        return sorted(rows, key=lambda r: (-r.us, r.key))

    def where(self, frame: int) -> str:
        f = self.frames[frame]
        return f"{f.file}:{f.line}"


# One row per aten op seen while capturing: (index of the traced op, op name, node count before, after, module path)
CaptureRow = tuple[int, str, int, int, str]


def rows_from_ops(ops: Sequence[OpRecord], nodes: int, modules: Sequence[str] = ()) -> list[CaptureRow]:
    """Capture rows from the traced ops' `node` counts (the tracer reads the count before each op it records
    while capturing): an op owns the nodes made until the next counted op; the last one, up to `nodes`.
    `modules`: the running module's path at each op (cgtool/trace/module_paths.py), when known."""
    counted = [(i, op) for i, op in enumerate(ops) if op.node >= 0]
    rows: list[CaptureRow] = []
    for k, (i, op) in enumerate(counted):
        end = counted[k + 1][1].node if k + 1 < len(counted) else nodes
        rows.append((i, op.name, op.node, max(end, op.node), modules[i] if i < len(modules) else ""))
    return rows


def node_profile(graph: Graph, frames: Sequence[Frame], ops: Sequence[OpRecord], rows: Sequence[CaptureRow],
                 times: ReplayTimes | None = None) -> NodeProfile:
    """The profile of a graph cgtool captured itself: node i was made by the op whose row's node count went past
    i (cuGraphGetNodes lists a graph's nodes in the order they were made); `frames` are the trace's."""
    owner: dict[int, tuple[int, str, str]] = {}
    for index, name, before, after, module in rows:
        for i in range(max(before, 0), after):
            owner.setdefault(i, (index, name, module))
    local = _FrameList()
    profile = NodeProfile(frames=local.frames)
    us = times.node_us if times is not None else {}
    for node in timed_nodes(graph):
        got = owner.get(node.id)
        op = ops[got[0]] if got is not None and 0 <= got[0] < len(ops) else None
        if op is not None and got is not None and not _same_op(op.name, got[1]):
            op = None  # the tracer did not record this op (the index is its previous one)
        if got is None:
            reason = OUTSIDE_OPS
        elif op is None or op.frame < 0:
            reason = UNTRACED_OP
        else:
            reason = ""
        if reason:
            profile.unmapped[reason] = profile.unmapped.get(reason, 0) + 1
        frame = local(_frame_at(frames, op.frame)) if op is not None else -1
        lib = local(_frame_at(frames, op.lib)) if op is not None else -1
        profile.nodes.append(NodeSource(node.id, got[1] if got else "", frame, lib, got[2] if got else "",
                                        CAPTURE if not reason else NOT_MAPPED, us.get(node.id)))
    return _counted(profile, graph, times)


class _FrameList:
    """A profile's own frame list: calling it with a frame gives the frame's index there (added once), -1 for None."""

    def __init__(self) -> None:
        self.frames: list[Frame] = []
        self.index: dict[Frame, int] = {}

    def __call__(self, frame: Frame | None) -> int:
        if frame is None:
            return -1
        k = self.index.get(frame)
        if k is None:
            k = self.index[frame] = len(self.frames)
            self.frames.append(frame)
        return k


def _frame_at(frames: Sequence[Frame], f: int) -> Frame | None:
    return frames[f] if 0 <= f < len(frames) else None


def _same_op(traced: str, seen: str) -> bool:
    """The tracer's "aten.mm" is the dispatcher's "aten.mm.default" (an overload of the same packet)."""
    return seen == traced or seen.startswith(traced + ".")


# What the compiled capture knows of one kernel node: (op text, the user's frame, the library frame); see
# cgtool/pipeline/compiled_lines.py
LaunchSource = tuple[str, Frame | None, Frame | None, str]


def launch_profile(graph: Graph, found: dict[int, LaunchSource], times: ReplayTimes | None = None) -> NodeProfile:
    """The profile of a graph of compiled code: each kernel node's launch in inductor's generated code (`found`:
    node id -> op text such as "linear, gelu: aten.addmm, aten.gelu", user frame, library frame, module)."""
    local = _FrameList()
    profile = NodeProfile(frames=local.frames)
    us = times.node_us if times is not None else {}
    for node in timed_nodes(graph):
        got = found.get(node.id)
        reason = NO_LAUNCH if got is None else (NO_STACK if got[1] is None and node.kind == "kernel" else "")
        if reason:
            profile.unmapped[reason] = profile.unmapped.get(reason, 0) + 1
        op, frame, lib, module = got if got is not None else ("", None, None, "")
        profile.nodes.append(NodeSource(node.id, op, local(frame), local(lib), module,
                                        INDUCTOR if frame is not None else NOT_MAPPED, us.get(node.id)))
    return _counted(profile, graph, times)


def _counted(profile: NodeProfile, graph: Graph, times: ReplayTimes | None) -> NodeProfile:
    """Fill in the kernel counts and the replay totals."""
    kernel_ids = {n.id for n in graph.nodes if n.kind == "kernel"}
    profile.kernels = len(kernel_ids)
    profile.kernels_mapped = sum(1 for n in profile.nodes if n.node in kernel_ids and n.frame >= 0)
    if times is not None:
        profile.replays, profile.replay_us, profile.unmatched_events = times.replays, times.replay_us, times.unmatched_events
    return profile


def eager_lines(profile: NodeProfile, graph: Graph, kernels: Sequence[tuple[str, str, float, int]],
                op_cpu_us: Sequence[float]) -> list[EagerLine]:
    """The lines (as the capture table groups them) whose eager CPU time passed their eager GPU time, from one
    profiled eager step: `kernels` (name, cat, µs, index into `op_cpu_us` of the outermost op that launched it).
    A line's eager and replay GPU times are those `replay_slower.line_times` gives it (the same stretches of the
    step on both sides, where eager and the capture ran different kernels too, so the columns compare); its CPU
    time is that of the ops that launched its eager kernels (each op counted for the first line that has it)."""
    claimed: set[int] = set()
    out = []
    for line, t in line_times(profile, graph, kernels).items():  # node order: an op is claimed as before
        ops = {kernels[j][3] for j in t.kernels if 0 <= kernels[j][3] < len(op_cpu_us)} - claimed
        claimed |= ops
        cpu = sum(op_cpu_us[o] for o in ops)
        if cpu > t.eager_us:
            out.append(EagerLine(line, cpu, t.eager_us, t.replay_us))
    return sorted(out, key=lambda e: -(e.cpu_us - e.replay_us))
