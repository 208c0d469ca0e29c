"""Profile steady replays of a captured graph, and one eager step, with torch.profiler: each kernel of a replay is
its own event with its GPU time (torch 2.11), which cgtool/graph/node_align.py matches to the graph's nodes. Both
return the profiler's chrome trace (read as JSON): kernel_split reads the times from it, timeline_events the
events of timeline.json."""

from __future__ import annotations

from typing import Any

Trace = dict[str, Any] | list[dict[str, Any]]  # a chrome trace as torch.profiler writes it

REPLAYS = 5  # profiled replays; the median per node is reported
WARM = 2  # replays run first, unprofiled


def profile_replays(graph: Any, replays: int = REPLAYS, warm: int = WARM) -> Trace:
    """The chrome trace of `replays` profiled replays of `graph` (a CUDAGraph) after `warm` unprofiled ones
    (kernel_split.replay_events: each replay's kernels, memcpys and memsets)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from cgtool.capture.kernel_split import chrome_trace

    for _ in range(warm):
        graph.replay()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            graph.replay()
        torch.cuda.synchronize()
    return chrome_trace(prof)


def profile_eager_step(step: Any, stream: Any = None) -> Trace:
    """The chrome trace of one eager step (`step()`, on `stream`) under torch.profiler after one unprofiled
    (kernel_split.eager_events: its kernels with the outermost aten op that launched each, and those ops' CPU µs)."""
    import contextlib

    import torch
    from torch.profiler import ProfilerActivity, profile

    from cgtool.capture.kernel_split import chrome_trace

    ctx = torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()
    with ctx:
        step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
    return chrome_trace(prof)
