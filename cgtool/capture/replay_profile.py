"""Profile steady replays of a captured graph with torch.profiler: each kernel of a replay is its own event with
its GPU time (torch 2.11), which cgtool/graph/node_align.py matches to the graph's nodes."""

from __future__ import annotations

from typing import Any

REPLAYS = 5  # profiled replays; the median per node is reported
WARM = 2  # replays run first, unprofiled


def profile_replays(graph: Any, replays: int = REPLAYS, warm: int = WARM) -> list[list[tuple[str, str, float]]]:
    """(name, cat, µs) of each kernel, memcpy and memset of each profiled replay of `graph` (a CUDAGraph)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from cgtool.capture.kernel_split import chrome_trace, replay_events

    for _ in range(warm):
        graph.replay()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            graph.replay()
        torch.cuda.synchronize()
    return replay_events(chrome_trace(prof))


def profile_eager_step(step: Any, stream: Any = None) -> tuple[list[tuple[str, str, float, int]], list[float]]:
    """One eager step (`step()`, on `stream`) under torch.profiler after one unprofiled: its kernels with the
    outermost aten op that launched each, and those ops' CPU µs (cgtool/capture/kernel_split.py eager_events)."""
    import contextlib

    import torch
    from torch.profiler import ProfilerActivity, profile

    from cgtool.capture.kernel_split import chrome_trace, eager_events

    ctx = torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()
    with ctx:
        step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
    return eager_events(chrome_trace(prof))
