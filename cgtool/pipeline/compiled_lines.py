"""Which line each node of a graph of compiled code came from (torch.compile without CUDA graphs, captured by
cgtool untraced), and its GPU time in replay: kernel nodes matched to the launches of inductor's generated code
(Triton kernels by name and order, library kernels by order between them), each launch's FX node stack from
inductor's line map (docs/node-lines.md)."""

from __future__ import annotations

import time
from typing import Any

from cgtool.graph.inductor_code import Launch, launches, node_launches, stack_frames
from cgtool.model.node_profile import LaunchSource, NodeProfile, launch_profile
from cgtool.model.report import Report
from cgtool.model.report_parts import NODE_LINES, Skip
from cgtool.script.frames import is_user_file, make_frame


def compiled_node_lines(captured: Any, graph: Any, report: Report) -> NodeProfile:
    """Every generated module of the process is read, in load order (the worker runs one script)."""
    from cgtool.capture.inductor_modules import generated_modules
    from cgtool.capture.timeline_events import timeline
    from cgtool.pipeline.gpu_run import profiled_replay_times

    t0 = time.perf_counter()
    found: list[Launch] = []
    for _path, code, linemap in generated_modules():
        found.extend(launches(code, linemap))
    sources = {node: launch_source(x) for node, x in node_launches(graph, found).items()}
    replays, times = profiled_replay_times(captured, graph, report)
    profile = launch_profile(graph, sources, times)
    if times is not None:  # timeline.json: the replays event by event
        profile.timeline = timeline(graph, replays)
    report.phase_ms["node_lines"] = round((time.perf_counter() - t0) * 1e3, 2)
    if not found:
        report.skipped.append(Skip(NODE_LINES, (
                "lines of the compiled graph's nodes: no generated module of inductor was found")))
    return profile


def launch_source(x: Launch) -> LaunchSource:
    """The op text of a launch, and the user's and the library's frame of its FX node's stack."""
    what = ", ".join(x.sources)
    if x.aten:
        what = f"{what}: {', '.join(x.aten)}" if what else ", ".join(x.aten)
    frames = stack_frames(x.stack)
    user = next((make_frame(f, n, fn) for f, n, fn in reversed(frames) if is_user_file(f)), None)
    inner = frames[-1] if frames else None
    lib = make_frame(*inner) if inner is not None and not is_user_file(inner[0]) else None
    return what or x.kernel, user, lib, ""
