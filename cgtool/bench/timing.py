"""Time one block of eager steps or graph replays on the GPU: CUDA events plus the host wall clock."""

from __future__ import annotations

import time
from typing import Any, Callable


def calibrate(fn: Callable[[], None], target_ms: float = 5.0, max_iters: int = 1000,
              before: Callable[[], None] | None = None) -> int:
    """How many calls of `fn` make one timed block of about target_ms (at most max_iters); `before` runs before
    each of the two calls it times (a stateful step's state put back)."""
    import torch

    if before is not None:
        before()
    fn()
    torch.cuda.synchronize()
    if before is not None:
        before()
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    one_ms = max((time.perf_counter() - t0) * 1e3, 1e-3)
    return max(1, min(max_iters, int(target_ms / one_ms)))


def time_block(fn: Callable[[], None], iters: int, stream: Any, before: Callable[[], None] | None = None) -> tuple[float, float]:
    """(gpu_us, wall_us) per call over one block of `iters` calls on `stream`.

    GPU time is the CUDA-event interval on the stream; wall time runs from the host clock before the
    first launch to after the synchronize that ends the block, so it counts CPU launch overhead.
    With `before` (e.g. an L2 flush) each call is timed on its own and `before` is left out.
    """
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    stream.synchronize()
    if before is None:
        t0 = time.perf_counter()
        start.record(stream)
        for _ in range(iters):
            fn()
        end.record(stream)
        end.synchronize()
        wall = time.perf_counter() - t0
        return start.elapsed_time(end) * 1e3 / iters, wall * 1e6 / iters
    gpu = wall = 0.0
    for _ in range(iters):
        before()
        stream.synchronize()
        t0 = time.perf_counter()
        start.record(stream)
        fn()
        end.record(stream)
        end.synchronize()
        wall += time.perf_counter() - t0
        gpu += start.elapsed_time(end) * 1e3
    return gpu / iters, wall * 1e6 / iters
