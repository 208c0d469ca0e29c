"""Which batch sizes to capture: from a sweep's measured cost per size, an expected batch-size histogram and a
memory budget, pick the sizes (every batch padded up to the next captured size; batches above the largest run
eager), and predict memory, capture time and the average speedup. Pure arithmetic: no torch, no I/O.

Between measured sizes every figure is interpolated linearly; beyond them it is extrapolated from the two
nearest measured sizes (and `Plan.extrapolated` says so). The memory of a set captured into one pool is the
allocator replayed over the sweep's own capture allocations (cgtool/bench/pool_model.py) when the sweep recorded
them, else the fraction `shared_extra` fitted on the sweep's shared pool.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cgtool.bench.pool_model import PoolModel
from cgtool.bench.size_inputs import (  # the inputs the planner takes, importable from here as before
    MAX_SWEEP_SIZES, parse_bytes, parse_histogram, parse_sizes, range_histogram)


@dataclass(frozen=True)
class SizeCost:
    """What one captured size costs and gains, as bench measured it (times per iteration, µs)."""

    size: int
    pool_bytes: int
    capture_ms: float  # capture and instantiate together
    eager_us: float
    replay_us: float


@dataclass(frozen=True)
class CostModel:
    """Measured sizes, and the memory of a shared pool: `pool` (the allocator replayed over each size's capture
    allocations) when the sweep recorded them, else `shared_extra`, how much of a smaller graph's pool a shared
    pool still adds (0 when smaller graphs fit wholly in the largest graph's blocks, 1 when each needs its own)."""

    points: tuple[SizeCost, ...]
    shared_extra: float = 1.0
    pool: PoolModel | None = None
    _cache: dict[tuple[str, float], float] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.points:
            raise ValueError("a cost model needs at least one measured size")
        object.__setattr__(self, "points", tuple(sorted(self.points, key=lambda p: p.size)))

    @property
    def sizes(self) -> list[int]:
        return [p.size for p in self.points]

    def value(self, name: str, size: float) -> float:
        """`name` (a SizeCost field) at `size`: linear between measured sizes, extended from the nearest two beyond."""
        key = (name, size)
        if key not in self._cache:
            self._cache[key] = self._interpolate(name, size)
        return self._cache[key]

    def _interpolate(self, name: str, size: float) -> float:
        pts = self.points
        if len(pts) == 1:
            return float(getattr(pts[0], name))
        i = next((k for k in range(1, len(pts)) if pts[k].size >= size), len(pts) - 1)
        a, b = pts[i - 1], pts[i]
        va, vb = float(getattr(a, name)), float(getattr(b, name))
        return max(va + (vb - va) * (size - a.size) / (b.size - a.size), 0.0)

    @property
    def memory_model(self) -> str:
        """"allocator" (the sweep's capture allocations replayed) or "fraction" (shared_extra)."""
        return "allocator" if self.pool is not None else "fraction"

    def memory(self, sizes: Collection[int]) -> float:
        """Bytes for capturing `sizes` into one pool, largest first, on one stream: the allocator replayed over
        their captures' allocations (`pool`); without it, the largest graph's pool plus `shared_extra` of each
        smaller one's."""
        if self.pool is not None:
            return float(self.pool.shared_bytes(sizes)) if sizes else 0.0
        return self._fraction_memory(sizes, self.shared_extra)

    def estimate(self, sizes: Collection[int]) -> float:
        """`memory`, quickly: with the allocator model, the fraction its replay of every measured size gives
        (the greedy search tries hundreds of sets; each replay walks every allocation of every size)."""
        if self.pool is None:
            return self.memory(sizes)
        key = ("fraction", 0.0)
        if key not in self._cache:
            self._cache[key] = shared_extra({p.size: p.pool_bytes for p in self.points}, self.pool.shared_bytes(self.sizes))
        return self._fraction_memory(sizes, self._cache[key])

    def _fraction_memory(self, sizes: Iterable[int], fraction: float) -> float:
        pools = sorted((self.value("pool_bytes", s) for s in set(sizes)), reverse=True)
        return pools[0] + fraction * sum(pools[1:]) if pools else 0.0

    def capture_ms(self, sizes: Iterable[int]) -> float:
        return sum(self.value("capture_ms", s) for s in set(sizes))


def shared_extra(pools: Mapping[int, int], shared_bytes: int) -> float:
    """`CostModel.shared_extra` from a measured shared pool of the sizes `pools` (size -> own pool bytes)."""
    if not pools:
        return 1.0
    largest = max(pools.values())
    rest = sum(pools.values()) - largest
    if rest <= 0:
        return 0.0
    return min(1.0, max(0.0, (shared_bytes - largest) / rest))


@dataclass(frozen=True)
class Plan:
    """A set of captured sizes and what it is predicted to cost and gain over the histogram."""

    sizes: tuple[int, ...]
    memory_bytes: float
    capture_ms: float
    mean_us: float  # expected time per step over the histogram, padding included
    eager_mean_us: float  # the same, every batch eager
    extrapolated: bool = False  # some size or batch lies outside the measured sizes

    @property
    def speedup(self) -> float:
        return self.eager_mean_us / self.mean_us if self.mean_us > 0 else math.inf

    def to_json(self) -> dict[str, object]:
        return {"sizes": list(self.sizes), "memory_bytes": round(self.memory_bytes), "capture_ms": self.capture_ms,
                "mean_us": self.mean_us, "eager_mean_us": self.eager_mean_us, "speedup": self.speedup,
                "extrapolated": self.extrapolated}


def step_us(model: CostModel, batch: int, captured: Sequence[int]) -> float:
    """Time of one batch: replay of the smallest captured size that holds it, else eager at its own size.
    `captured` must be sorted."""
    i = bisect.bisect_left(captured, batch)
    return model.value("replay_us", captured[i]) if i < len(captured) else model.value("eager_us", batch)


def evaluate(model: CostModel, histogram: Mapping[int, float], sizes: Iterable[int], quick: bool = False) -> Plan:
    """Predicted memory, capture time and mean step time of capturing `sizes` for `histogram` (batch -> weight);
    `quick`: the memory estimated (CostModel.estimate)."""
    chosen = tuple(sorted(set(sizes)))
    total = sum(histogram.values())
    if total <= 0:
        raise ValueError("the histogram has no weight")
    mean = sum(w * step_us(model, b, chosen) for b, w in histogram.items()) / total
    eager = sum(w * model.value("eager_us", b) for b, w in histogram.items()) / total
    lo, hi = model.sizes[0], model.sizes[-1]
    outside = any(not lo <= s <= hi for s in (*chosen, *histogram))
    memory = model.estimate(chosen) if quick else model.memory(chosen)
    return Plan(chosen, memory, model.capture_ms(chosen), mean, eager, outside)


def recommend(model: CostModel, histogram: Mapping[int, float], budget_bytes: float, max_sizes: int | None = None,
              min_gain: float = 0.002) -> Plan:
    """Greedy: add the batch size that saves the most expected time per added byte, while the set fits the budget,
    until no size saves at least `min_gain` of the current mean time (or `max_sizes` are chosen).

    Candidates are the histogram's batch sizes: a captured size that no batch has can be lowered to the largest
    batch below it, which costs no more memory and pads less. The search weighs sets by their estimated memory
    (CostModel.estimate); the set found is then priced with the allocator model, and while it is over the budget
    the size whose loss costs the least time goes.
    """
    candidates = sorted(b for b, w in histogram.items() if w > 0)
    if not candidates:
        raise ValueError("the histogram has no weight")
    chosen: list[int] = []
    current = evaluate(model, histogram, chosen, quick=True)
    while max_sizes is None or len(chosen) < max_sizes:
        best: tuple[float, Plan] | None = None
        for c in candidates:
            if c in chosen:
                continue
            trial = evaluate(model, histogram, [*chosen, c], quick=True)
            if trial.memory_bytes > budget_bytes:
                continue
            gain = current.mean_us - trial.mean_us
            if gain < min_gain * current.mean_us:
                continue
            added = max(trial.memory_bytes - current.memory_bytes, 1.0)
            score = gain / added
            if best is None or score > best[0]:
                best = (score, trial)
        if best is None:
            break
        current = best[1]
        chosen = list(current.sizes)
    plan = evaluate(model, histogram, chosen)
    while plan.sizes and plan.memory_bytes > budget_bytes:  # the estimate was short: drop the cheapest loss
        rest = min((evaluate(model, histogram, [s for s in plan.sizes if s != drop], quick=True)
                    for drop in plan.sizes), key=lambda p: p.mean_us)
        plan = evaluate(model, histogram, rest.sizes)
    return plan


def model_of_report(report: Any) -> CostModel:
    """The cost model of a bench sweep (a BenchReport): wall times, pool bytes, capture + instantiate time per
    size, each size's capture allocations when the sweep recorded them (the shared-pool model), and the
    shared-pool measurement (the fraction, when they are missing)."""
    points = tuple(SizeCost(int(r.size), int(r.pool_bytes or 0), float((r.capture_ms or 0) + (r.instantiate_ms or 0)),
                            r.eager.wall.median, r.replay.wall.median) for r in report.results if r.size is not None)
    if not points:
        raise ValueError("planning needs a sweep: run bench with --sizes")
    extra = 1.0
    if report.shared_pool is not None:
        extra = shared_extra({p.size: p.pool_bytes for p in points}, report.shared_pool.pool_reserved)
    traces = {int(r.size): r.memory.alloc_trace for r in report.results
              if r.size is not None and r.memory is not None and r.memory.alloc_trace is not None}
    pool = PoolModel(traces) if traces and len(traces) == len(points) else None
    return CostModel(points, extra, pool)


def compare_plans(model: CostModel, histogram: Mapping[int, float], budget_bytes: float,
                  max_sizes: int | None = None) -> list[tuple[str, Plan]]:
    """The recommended set next to vLLM's default list up to the histogram's largest batch and to every measured
    size captured: (label, plan) rows for the table."""
    top = max(histogram)
    return [("recommended", recommend(model, histogram, budget_bytes, max_sizes)),
            ("vLLM default", evaluate(model, histogram, vllm_sizes(top))),
            ("every measured size", evaluate(model, histogram, model.sizes))]


def vllm_sizes(max_size: int) -> list[int]:
    """vLLM's default capture sizes up to max_size: 1, 2, 4, then every 8 below 256, then every 16 from 256
    (vllm/config/vllm.py, set_cudagraph_sizes: [1, 2, 4] + range(8, 256, 8) + range(256, max + 1, 16))."""
    sizes = [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, max_size + 1, 16))
    return [s for s in sizes if s <= max_size]

__all__ = ["MAX_SWEEP_SIZES", "CostModel", "Plan", "SizeCost", "compare_plans", "evaluate", "model_of_report", "parse_bytes", "parse_histogram", "parse_sizes", "range_histogram", "recommend",
           "shared_extra", "step_us", "vllm_sizes"]
