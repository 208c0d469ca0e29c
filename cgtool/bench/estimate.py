"""A point estimate with its confidence interval, and one mode's per-iteration times on both clocks: the parts of
a BenchResult (bench/result.py), with their JSON."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from cgtool.bench.stats import Stats
from cgtool.model.codec import Record, finite, meta, null_as

CLOCKS = ("gpu", "wall")


@dataclass(frozen=True)
class Estimate(Record):
    """A point estimate with its confidence interval."""

    # JSON has no infinity: an unbounded side (too few samples, or a zero median) is written as null
    point: float = field(metadata=meta(write=finite, read=null_as(math.inf)))
    low: float = field(metadata=meta(write=finite, read=null_as(-math.inf)))
    high: float = field(metadata=meta(write=finite, read=null_as(math.inf)))
    confidence: float = 0.95


@dataclass(frozen=True)
class ModeResult(Record):
    """Per-iteration times of one mode (eager or replay) on both clocks."""

    mode: str
    gpu: Stats  # CUDA events around the timed iterations on their stream
    wall: Stats  # host clock around the timed iterations, a synchronize ending each timed block
    iterations: int  # iterations timed; a sample may average several (one per block)

    def clock(self, name: str) -> Stats:
        if name not in CLOCKS:
            raise ValueError(f"unknown clock {name!r}; expected one of {CLOCKS}")
        return self.gpu if name == "gpu" else self.wall
