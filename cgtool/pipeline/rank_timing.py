"""Timing on every rank of a distributed run, in lockstep: the same fixed number of eager steps and replays
on every rank. (capture's adaptive timing stops when a rank's own numbers settle; ranks would then run
different numbers of collectives and the last ones would wait forever.)"""

from __future__ import annotations

import statistics

from cgtool.bench.timing import time_block
from cgtool.capture.harness import Captured
from cgtool.model.report import Timings


def lockstep_timings(captured: Captured, blocks: int = 6, per_block: int = 10, l2_flush: bool = False) -> Timings:
    """Median per-iteration GPU time of `blocks` alternating blocks of `per_block` eager steps and replays; with
    `l2_flush` (bench --l2-flush) the L2 cache is flushed before every call and each call timed on its own."""
    import torch

    def eager() -> None:
        captured.session.step(captured.static_inputs, "timing")

    fns = {"eager": eager, "replay": captured.graph.replay}
    times: dict[str, list[float]] = {"eager": [], "replay": []}
    flush = None
    if l2_flush:  # as bench's own measurement flushes it (cgtool/bench/measure.py)
        from cgtool.bench.measure import l2_flusher

        flush = l2_flusher()
    with torch.cuda.stream(captured.stream):
        for b in range(blocks):
            order = ("eager", "replay") if b % 2 == 0 else ("replay", "eager")
            for mode in order:
                gpu_us, _wall = time_block(fns[mode], per_block, captured.stream, flush)
                times[mode].append(gpu_us)
    flushed = ", the L2 cache flushed before every call (each timed on its own)" if l2_flush else ""
    return Timings(
        eager_us=statistics.median(times["eager"]), replay_us=statistics.median(times["replay"]),
        iterations=blocks * per_block,
        method=(f"median of {blocks} blocks of {per_block} eager steps and {blocks} of {per_block} replays, taking "
                f"turns, CUDA events on the capture stream{flushed}; the same count on every rank (lockstep: "
                "collectives must match)"))
