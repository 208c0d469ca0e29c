"""The stopping rule: measure modes in alternating rounds until the CIs are tight, or time or iterations run out.

Independent of CUDA: the GPU loop passes a `measure_round(mode)` callback; tests pass synthetic ones and a fake clock.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from cgtool.bench.cpu_load import quiet, quiet_limit
from cgtool.bench.stats import Stats, batch_rel_ci, median_rel_ci
from cgtool.model.codec import Record, finite, meta, null_as

CONVERGED = "converged"  # every mode's (and clock's) CI within ±target (rel_ci: median and batch CIs)
BUDGET = "budget"  # the time budget ran out (or the next round would overrun it)
ITERATIONS = "iterations"  # a mode reached max_iterations (the cap, or --iters)
STOPPED_BY = (CONVERGED, BUDGET, ITERATIONS)
DEFAULT_CLOCK = "time"  # the clock name given to samples returned as a plain list

# Re-check convergence only once the sample count grew by this fraction: the check is O(n), rounds may be many.
_RECHECK_GROWTH = 0.05


@dataclass(frozen=True)
class Block:
    """One timed block: per-iteration samples per clock, and how many iterations the block ran.

    A sample may stand for several iterations (a block's average per iteration, as bench.timing measures
    it), so `iterations` is counted apart; None means one iteration per sample of the longest clock.
    """

    samples: Mapping[str, Sequence[float]]
    iterations: int | None = None
    probe_us: float | None = None  # the CPU-speed probe just before the block (cgtool.bench.cpu_load), if taken


# What measure_round returns: a Block, {clock: samples} (e.g. {"gpu": [...], "wall": [...]}), or one clock's list.
RoundSamples = Block | Mapping[str, Sequence[float]] | Sequence[float]


@dataclass(frozen=True)
class RoundStatus(Record):
    """Where measuring stands after a round; given to on_progress (and sent across the worker pipe via to_json)."""

    rounds: int
    elapsed_s: float
    budget_s: float
    iterations: int  # the fewest iterations among modes
    max_iterations: int
    # the widest relative CI (rel_ci) among modes and clocks (inf before one exists; null in JSON)
    worst_rel_ci: float = field(metadata=meta(write=finite, read=null_as(math.inf)))
    target_rel_ci: float | None

    @property
    def fraction(self) -> float:
        """Estimated fraction done, 0..1: the furthest of time, iteration cap and CI (which shrinks as 1/sqrt(n))."""
        parts = [self.elapsed_s / self.budget_s if self.budget_s > 0 else 1.0, self.iterations / max(1, self.max_iterations)]
        if self.target_rel_ci and math.isfinite(self.worst_rel_ci) and self.worst_rel_ci > 0:
            parts.append((self.target_rel_ci / self.worst_rel_ci) ** 2)
        return min(1.0, max(parts))


@dataclass(frozen=True)
class AdaptiveResult(Record):
    """All samples per mode and clock in measuring order, iterations per mode, and why measuring stopped."""

    samples: dict[str, dict[str, list[float]]]  # mode -> clock -> samples
    iterations: dict[str, int]  # mode -> iterations timed
    rounds: int
    elapsed_s: float
    stopped_by: str  # one of STOPPED_BY
    target_rel_ci: float | None
    confidence: float
    order: list[str] = field(default_factory=list)  # the mode of each block in measuring order (ABBA...)
    probes: dict[str, dict[str, list[float | None]]] = field(default_factory=dict)  # mode -> clock -> probe per sample

    @property
    def limit(self) -> float | None:
        """Probes above this ran on a slowed CPU (cgtool.bench.cpu_load); None without probes."""
        return quiet_limit(p for clocks in self.probes.values() for ps in clocks.values() for p in ps)

    def quiet_samples(self, mode: str, clock: str) -> list[float]:
        """The samples of blocks run on a CPU at full speed (all of them without probes)."""
        xs = self.samples[mode][clock]
        return quiet(xs, self.probes.get(mode, {}).get(clock, [None] * len(xs)), self.limit)

    def stats(self, mode: str, clock: str) -> Stats:
        """Statistics of the blocks run on a CPU at full speed."""
        return Stats.of(self.quiet_samples(mode, clock), self.confidence)


def round_order(round_index: int, modes: Sequence[str]) -> list[str]:
    """Modes in the order round `round_index` measures them: forward on even rounds, reversed on odd (AB BA AB ...)."""
    return list(modes) if round_index % 2 == 0 else list(reversed(modes))


def _as_block(result: RoundSamples) -> Block:
    if isinstance(result, Block):
        return result
    return Block(result if isinstance(result, Mapping) else {DEFAULT_CLOCK: result})


def run_rounds(
    measure_round: Callable[[str], RoundSamples],
    modes: Sequence[str] = ("eager", "replay"),
    target_rel_ci: float | None = 0.01,
    budget_s: float = 10.0,
    min_rounds: int = 4,
    min_time_s: float = 0.0,
    max_iterations: int = 1_000_000,
    confidence: float = 0.95,
    clock: Callable[[], float] = time.perf_counter,
    on_progress: Callable[[RoundStatus], None] | None = None,
) -> AdaptiveResult:
    """Measure `modes` alternately, one block each per round, until a stopping condition holds after a round.

    measure_round(mode) times one block in that mode and returns its per-iteration samples (a Block,
    {clock: [...]}, or a plain list). Stops with CONVERGED once min_rounds are done, min_time_s has passed
    and every mode's and clock's CI (rel_ci) is within ±target_rel_ci (None: never; use it with max_iterations
    for --iters), counting only blocks whose CPU probe (Block.probe_us) shows the CPU at full speed;
    else ITERATIONS once a mode has max_iterations; else BUDGET once budget_s has elapsed or the next
    round, guessed as long as the last, would overrun it. At least one round always runs. Rounds reverse
    the order each time (AB BA AB BA) so drift, clocks and warm caches favour neither mode.
    """
    if not modes:
        raise ValueError("run_rounds needs at least one mode")
    samples: dict[str, dict[str, list[float]]] = {m: {} for m in modes}
    probes: dict[str, dict[str, list[float | None]]] = {m: {} for m in modes}
    iterations = {m: 0 for m in modes}
    order: list[str] = []
    start = clock()
    rounds, checked_at, worst = 0, 0, math.inf
    while True:
        round_start = clock()
        for mode in round_order(rounds, modes):
            block = _as_block(measure_round(mode))
            for name, xs in block.samples.items():
                new = [float(x) for x in xs]
                samples[mode].setdefault(name, []).extend(new)
                probes[mode].setdefault(name, []).extend([block.probe_us] * len(new))
            longest = max((len(xs) for xs in block.samples.values()), default=0)
            iterations[mode] += longest if block.iterations is None else block.iterations
            order.append(mode)
        rounds += 1
        total = sum(len(xs) for clocks in samples.values() for xs in clocks.values())
        if total >= checked_at * (1 + _RECHECK_GROWTH):
            so_far = AdaptiveResult(samples, iterations, rounds, 0.0, "", target_rel_ci, confidence, order, probes)
            worst = _worst_rel_ci(so_far)
            checked_at = total
        now = clock()
        elapsed, last_round = now - start, now - round_start
        if on_progress is not None:
            on_progress(RoundStatus(rounds, elapsed, budget_s, min(iterations.values()), max_iterations, worst, target_rel_ci))
        if target_rel_ci is not None and rounds >= min_rounds and elapsed >= min_time_s and worst <= target_rel_ci:
            stopped_by: str | None = CONVERGED
        elif max(iterations.values()) >= max_iterations:
            stopped_by = ITERATIONS
        elif elapsed >= budget_s or elapsed + last_round > budget_s:
            stopped_by = BUDGET
        else:
            stopped_by = None
        if stopped_by is not None:
            return AdaptiveResult(samples, iterations, rounds, elapsed, stopped_by, target_rel_ci, confidence, order, probes)


def rel_ci(xs: Sequence[float], confidence: float) -> float:
    """How sure the level of one series (in measuring order) is: the wider of the median's order-statistic
    CI and the batch-medians CI, which widens when the level drifts during the run (cgtool.bench.stats)."""
    if not xs:
        return math.inf
    return max(median_rel_ci(sorted(xs), confidence), batch_rel_ci(xs, confidence))


def _worst_rel_ci(result: AdaptiveResult) -> float:
    """The widest relative CI (rel_ci) over modes and clocks of the full-speed blocks; inf while a mode has
    no samples, or too few for a CI."""
    if any(not clocks for clocks in result.samples.values()):
        return math.inf
    return max(rel_ci(result.quiet_samples(mode, name), result.confidence)
               for mode, clocks in result.samples.items() for name in clocks)
