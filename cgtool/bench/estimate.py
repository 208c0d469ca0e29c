"""A point estimate with its confidence interval, and one mode's per-iteration times on both clocks: the parts of
a BenchResult (bench/result.py), with their JSON."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from cgtool.bench.stats import Stats

CLOCKS = ("gpu", "wall")


def finite(x: float) -> float | None:
    """JSON has no infinity: an unbounded value is written as null."""
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its confidence interval."""

    point: float
    low: float
    high: float
    confidence: float = 0.95

    def to_json(self) -> dict[str, Any]:
        # JSON has no infinity: an unbounded side (too few samples, or a zero median) is written as null.
        return {"point": finite(self.point), "low": finite(self.low), "high": finite(self.high), "confidence": self.confidence}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Estimate:
        def num(key: str, unbounded: float) -> float:
            return unbounded if d[key] is None else float(d[key])

        return cls(num("point", math.inf), num("low", -math.inf), num("high", math.inf), float(d.get("confidence", 0.95)))


@dataclass(frozen=True)
class ModeResult:
    """Per-iteration times of one mode (eager or replay) on both clocks."""

    mode: str
    gpu: Stats  # CUDA events around the timed iterations on their stream
    wall: Stats  # host clock around the timed iterations, a synchronize ending each timed block
    iterations: int  # iterations timed; a sample may average several (one per block)

    def clock(self, name: str) -> Stats:
        if name not in CLOCKS:
            raise ValueError(f"unknown clock {name!r}; expected one of {CLOCKS}")
        return self.gpu if name == "gpu" else self.wall

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "gpu": self.gpu.to_json(), "wall": self.wall.to_json(), "iterations": self.iterations}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ModeResult:
        return cls(d["mode"], Stats.from_json(d["gpu"]), Stats.from_json(d["wall"]), int(d["iterations"]))
