"""Time eager steps and graph replays on the GPU: alternating blocks, CUDA events plus host wall clock."""

from __future__ import annotations

import time
from typing import Any, Callable


def calibrate(fn: Callable[[], None], target_ms: float = 5.0, max_iters: int = 1000) -> int:
    """How many calls of `fn` make one timed block of about target_ms."""
    import torch

    fn()
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


def time_alternating(fns: dict[str, Callable[[], None]], stream: Any, rounds: int, iters: dict[str, int],
                     budget_s: float | None = None) -> dict[str, dict[str, list[float]]]:
    """Per-iteration (gpu, wall) µs samples, one per block, the modes taking turns (ABBA order)."""
    import torch

    samples: dict[str, dict[str, list[float]]] = {m: {"gpu": [], "wall": []} for m in fns}
    modes = list(fns)
    t_end = None if budget_s is None else time.perf_counter() + budget_s
    with torch.cuda.stream(stream):
        for r in range(rounds):
            for mode in (modes if r % 2 == 0 else modes[::-1]):
                gpu, wall = time_block(fns[mode], iters[mode], stream)
                samples[mode]["gpu"].append(gpu)
                samples[mode]["wall"].append(wall)
            if t_end is not None and r >= 2 and time.perf_counter() > t_end:
                break
    return samples
