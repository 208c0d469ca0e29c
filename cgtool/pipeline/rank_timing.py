"""Timing on every rank of a distributed run, in lockstep: the same fixed number of eager steps and replays
on every rank. (capture's adaptive timing stops when a rank's own numbers settle; ranks would then run
different numbers of collectives and the last ones would wait forever.)"""

from __future__ import annotations

import statistics

from cgtool.bench.timing import time_block
from cgtool.capture.harness import Captured
from cgtool.model.report import Timings


def lockstep_timings(captured: Captured, blocks: int = 6, per_block: int = 10) -> Timings:
    """Median per-iteration GPU time of `blocks` alternating blocks of `per_block` eager steps and replays."""
    import torch

    def eager() -> None:
        captured.session.step(captured.static_inputs, "timing")

    fns = {"eager": eager, "replay": captured.graph.replay}
    times: dict[str, list[float]] = {"eager": [], "replay": []}
    with torch.cuda.stream(captured.stream):
        for b in range(blocks):
            order = ("eager", "replay") if b % 2 == 0 else ("replay", "eager")
            for mode in order:
                gpu_us, _wall = time_block(fns[mode], per_block, captured.stream)
                times[mode].append(gpu_us)
    return Timings(
        eager_us=statistics.median(times["eager"]), replay_us=statistics.median(times["replay"]),
        iterations=blocks * per_block,
        method=(f"median of {blocks} blocks of {per_block} eager steps and {blocks} of {per_block} replays, taking "
                "turns, CUDA events on the capture stream; the same count on every rank (lockstep: collectives "
                "must match)"))
