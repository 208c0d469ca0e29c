"""The stopping rule, driven by synthetic measure functions (seeded noise) and a fake clock: fast and exact."""

from __future__ import annotations

import json
import math
import random

import pytest
from conftest import FakeClock

from cgtool.bench.adaptive import (
    BUDGET,
    CONVERGED,
    DEFAULT_CLOCK,
    ITERATIONS,
    AdaptiveResult,
    Block,
    RoundStatus,
    round_order,
    run_rounds,
)
from cgtool.bench.result import BenchResult


class SyntheticGpu:
    """Times blocks like bench.timing does (one averaged gpu/wall sample per block), advancing a fake clock."""

    def __init__(self, clock: FakeClock, medians: dict[str, float], noise: float, iters: int = 20, seed: int = 0, drift: float = 0.0) -> None:
        self.clock, self.medians, self.noise, self.iters, self.drift = clock, medians, noise, iters, drift
        self.rng = random.Random(seed)
        self.calls: list[str] = []

    def __call__(self, mode: str) -> Block:
        self.calls.append(mode)
        slow = 1 + self.drift * self.clock.now  # e.g. a GPU clocking down as it heats up
        gpu = self.medians[mode] * slow * math.exp(self.rng.gauss(0, self.noise))
        wall = gpu * 1.05
        self.clock.now += wall * self.iters * 1e-6
        return Block({"gpu": [gpu], "wall": [wall]}, iterations=self.iters)


def test_round_order_alternates_abba() -> None:
    assert [m for r in range(4) for m in round_order(r, ("eager", "replay"))] == ["eager", "replay", "replay", "eager"] * 2


def test_converges_when_noise_is_low() -> None:
    clock = FakeClock()
    gpu = SyntheticGpu(clock, {"eager": 690.0, "replay": 86.0}, noise=0.02)
    result = run_rounds(gpu, target_rel_ci=0.01, budget_s=10.0, clock=clock)
    assert result.stopped_by == CONVERGED
    for mode in ("eager", "replay"):
        for name in ("gpu", "wall"):
            assert result.stats(mode, name).rel_ci <= 0.01 * 1.2  # checked at most 5% of samples ago
    assert result.iterations == {"eager": result.rounds * 20, "replay": result.rounds * 20}
    assert result.order == gpu.calls
    assert result.order[:4] == ["eager", "replay", "replay", "eager"]
    assert result.elapsed_s == pytest.approx(clock.now)


def test_budget_stops_noisy_measurements_without_overrunning() -> None:
    clock = FakeClock()
    gpu = SyntheticGpu(clock, {"eager": 1000.0, "replay": 500.0}, noise=0.5, iters=100)
    result = run_rounds(gpu, target_rel_ci=0.01, budget_s=2.0, clock=clock)
    assert result.stopped_by == BUDGET
    assert result.elapsed_s <= 2.0  # the next round (about as long as the last) would not have fitted
    assert result.elapsed_s > 2.0 - 0.2  # ... and it did not stop much earlier either (a round is ~0.16 s)


def test_iteration_cap_stops_exactly() -> None:
    clock = FakeClock()
    gpu = SyntheticGpu(clock, {"eager": 100.0, "replay": 50.0}, noise=0.1, iters=10)
    result = run_rounds(gpu, target_rel_ci=None, max_iterations=100, clock=clock)  # --iters 100
    assert result.stopped_by == ITERATIONS
    assert result.iterations == {"eager": 100, "replay": 100}
    assert result.rounds == 10


def test_min_rounds_holds_back_an_early_convergence() -> None:
    # Constant samples: the CI is zero-width as soon as it exists, but min_rounds still applies.
    result = run_rounds(lambda mode: [5.0] * 10, target_rel_ci=0.01, min_rounds=6, clock=FakeClock())
    assert result.stopped_by == CONVERGED and result.rounds == 6
    assert set(result.samples["eager"]) == {DEFAULT_CLOCK}  # a plain list is one clock


def test_no_convergence_before_the_ci_exists() -> None:
    # One sample per block: the CI needs 8 batches of 3 samples (n >= 24; the median's own CI n >= 6),
    # whatever min_rounds says; the CI is re-checked once the sample count grew 5%.
    result = run_rounds(lambda mode: [5.0], target_rel_ci=0.01, min_rounds=1, clock=FakeClock())
    assert result.stopped_by == CONVERGED and 24 <= result.rounds <= 26


def test_at_least_one_round_runs_even_with_no_budget() -> None:
    clock = FakeClock()
    result = run_rounds(SyntheticGpu(clock, {"eager": 10.0, "replay": 5.0}, 0.1), budget_s=0.0, clock=clock)
    assert result.stopped_by == BUDGET and result.rounds == 1
    assert all(result.samples[m]["gpu"] for m in ("eager", "replay"))


def test_alternating_rounds_cancel_linear_drift() -> None:
    # The GPU gets ~2.4x slower over the run (no noise, to isolate the schedule). ABBA leaves the speedup
    # nearly unbiased; measuring all eager blocks first and then all replay blocks would be far off.
    def speedup(schedule: list[tuple[str, ...]]) -> float:
        clock = FakeClock()
        gpu = SyntheticGpu(clock, {"eager": 600.0, "replay": 100.0}, noise=0.0, drift=0.3)
        samples = {}
        for modes in schedule:
            rounds = run_rounds(gpu, modes=modes, target_rel_ci=None, max_iterations=4000, clock=clock)
            samples.update(rounds.samples)
        both = AdaptiveResult(samples, {m: 4000 for m in samples}, 200, clock.now, ITERATIONS, None, 0.95)
        return BenchResult.from_rounds(both, script="s.py", entry="main").speedup_gpu.point

    assert speedup([("eager", "replay")]) == pytest.approx(6.0, rel=0.005)
    assert speedup([("eager",), ("replay",)]) < 6.0 * 0.8


def test_progress_is_reported_every_round() -> None:
    clock = FakeClock()
    seen: list[RoundStatus] = []
    result = run_rounds(SyntheticGpu(clock, {"eager": 690.0, "replay": 86.0}, 0.02), clock=clock, on_progress=seen.append)
    assert [p.rounds for p in seen] == list(range(1, result.rounds + 1))
    assert math.isinf(seen[0].worst_rel_ci)  # one sample per mode: no CI yet
    assert 0 <= seen[0].fraction < seen[-1].fraction <= 1
    assert seen[-1].worst_rel_ci <= 0.01 and seen[-1].fraction == 1.0
    assert RoundStatus.from_json(json.loads(json.dumps(seen[0].to_json()))) == seen[0]
    assert RoundStatus.from_json(json.loads(json.dumps(seen[-1].to_json()))) == seen[-1]


def test_adaptive_result_json_round_trip() -> None:
    clock = FakeClock()
    result = run_rounds(SyntheticGpu(clock, {"eager": 690.0, "replay": 86.0}, 0.05), clock=clock, max_iterations=200)
    assert AdaptiveResult.from_json(json.loads(json.dumps(result.to_json()))) == result


def test_modes_are_required() -> None:
    with pytest.raises(ValueError):
        run_rounds(lambda mode: [1.0], modes=())
