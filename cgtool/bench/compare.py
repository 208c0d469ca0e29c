"""Compare a bench report with a baseline, size by size: the change in replay time with its CI, and the CI gate.

Works on the stored summaries (no raw samples needed); the method is in docs/bench.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from cgtool.bench.estimate import Estimate
from cgtool.bench.result import BenchReport
from cgtool.bench.stats import Stats
from cgtool.model.codec import Record

# SizeChange.status values (with the PCT the comparison was made for)
REGRESSED = "regressed"  # slower beyond both the CI and PCT: fails --fail-if-slower
SLOWER = "slower"  # significantly slower, but by no more than PCT
FASTER = "faster"  # significantly faster
SAME = "same"  # the CI of the change contains 0
ENVIRONMENT_KEYS = ("gpu", "driver", "torch", "torch_cuda")  # differences worth a note


def log_median_se(s: Stats) -> float:
    """Standard error of log(median), read off the order-statistic CI (whose coverage is known exactly)."""
    if s.ci_low <= 0 or s.ci_coverage <= 0:
        return math.inf
    z = NormalDist().inv_cdf((1 + s.ci_coverage) / 2)
    return (math.log(s.ci_high) - math.log(s.ci_low)) / (2 * z)


def relative_change(current: Stats, baseline: Stats, confidence: float = 0.95) -> Estimate:
    """current.median / baseline.median - 1 with a CI: +0.05 is 5% slower.

    The two runs are independent, so on the log scale their standard errors add in quadrature.
    """
    if baseline.median <= 0 or current.median <= 0:
        return Estimate(math.inf if baseline.median <= 0 else -1.0, -1.0, math.inf, confidence)
    log_ratio = math.log(current.median / baseline.median)
    half = NormalDist().inv_cdf((1 + confidence) / 2) * math.hypot(log_median_se(current), log_median_se(baseline))
    return Estimate(math.expm1(log_ratio), math.expm1(log_ratio - half), math.expm1(log_ratio + half), confidence)


def is_regression(change: Estimate, pct: float) -> bool:
    """Slower beyond both PCT percent and the noise: the point change exceeds PCT and its CI lies above 0."""
    return change.low > 0 and change.point * 100 > pct


@dataclass(frozen=True)
class SizeChange(Record):
    """How replay time at one size moved from the baseline."""

    size: int | None
    clock: str  # gpu or wall
    baseline_us: float  # replay median
    current_us: float
    change: Estimate  # relative: +0.05 is 5% slower
    baseline_speedup: float  # eager/replay on the same clock
    current_speedup: float
    status: str  # REGRESSED, SLOWER, FASTER, SAME for the comparison's pct

    def regressed(self, pct: float) -> bool:
        return is_regression(self.change, pct)


@dataclass(frozen=True)
class Comparison(Record):
    """Every size both reports measured, the sizes only one did, and environment differences worth knowing."""

    JSON_COMPUTED = {"regressed": lambda c: c.regressed()}

    changes: tuple[SizeChange, ...]
    pct: float  # the threshold the statuses were computed with (0 without --fail-if-slower)
    only_in_baseline: tuple[int | None, ...] = ()
    only_in_current: tuple[int | None, ...] = ()
    notes: tuple[str, ...] = ()  # e.g. "baseline ran on NVIDIA A100, this run on NVIDIA H100"

    def regressed(self, pct: float | None = None) -> bool:
        return bool(self.regressions(pct))

    def regressions(self, pct: float | None = None) -> list[SizeChange]:
        threshold = self.pct if pct is None else pct
        return [c for c in self.changes if c.regressed(threshold)]


def compare(current: BenchReport, baseline: BenchReport, pct: float = 0.0, clock: str = "gpu", confidence: float = 0.95) -> Comparison:
    """Change in replay median time per size (matched by size; None matches a run without --sizes)."""
    changes = []
    for result in current.results:
        base = baseline.result_for(result.size)
        if base is None:
            continue
        cur_s, base_s = result.replay.clock(clock), base.replay.clock(clock)
        change = relative_change(cur_s, base_s, confidence)
        changes.append(
            SizeChange(
                size=result.size,
                clock=clock,
                baseline_us=base_s.median,
                current_us=cur_s.median,
                change=change,
                baseline_speedup=base.speedup(clock).point,
                current_speedup=result.speedup(clock).point,
                status=change_status(change, pct),
            )
        )
    cur_sizes, base_sizes = current.sizes, baseline.sizes
    return Comparison(
        changes=tuple(changes),
        pct=pct,
        only_in_baseline=tuple(s for s in base_sizes if s not in cur_sizes),
        only_in_current=tuple(s for s in cur_sizes if s not in base_sizes),
        notes=tuple(_environment_notes(current, baseline)),
    )


def change_status(change: Estimate, pct: float) -> str:
    if is_regression(change, pct):
        return REGRESSED
    if change.low > 0:
        return SLOWER
    if change.high < 0:
        return FASTER
    return SAME


# Note a change of the CPU's best speed between the runs beyond this (the probe's own spread is a few %).
CPU_FLOOR_NOTE = 0.10


def _environment_notes(current: BenchReport, baseline: BenchReport) -> list[str]:
    if not current.results or not baseline.results:
        return []
    now, then = current.results[0].environment, baseline.results[0].environment
    notes = [
        f"{key}: baseline {then.get(key)}, this run {now.get(key)}"
        for key in ENVIRONMENT_KEYS
        if key in now and key in then and now[key] != then[key]
    ]
    cpu_now, cpu_then = current.results[0].cpu_load, baseline.results[0].cpu_load
    if cpu_now and cpu_then and cpu_then.probe_floor_us > 0:
        change = cpu_now.probe_floor_us / cpu_then.probe_floor_us - 1
        if abs(change) > CPU_FLOOR_NOTE:
            notes.append(f"the CPU ran {abs(change):.0%} {'slower' if change > 0 else 'faster'} at its best than during the "
                         "baseline (pure-Python probe): eager times and speedups move with it, replay times hardly")
    return notes
