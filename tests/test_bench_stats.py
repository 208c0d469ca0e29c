"""cgtool.bench.stats on synthetic timing data: summaries, the order-statistic median CI, the median bootstrap."""

from __future__ import annotations

import itertools
import json
import math
import random
import statistics
import time
from collections import Counter

import pytest

from cgtool.bench.stats import (
    Stats,
    difference_ci,
    median_ci_ranks,
    median_rel_ci,
    median_sampler,
    quantile,
    speedup_ci,
)


def lognormal(rng: random.Random, n: int, median: float, sigma: float) -> list[float]:
    """Timing-like data: positive, right-skewed, with the given median."""
    return [median * math.exp(rng.gauss(0, sigma)) for _ in range(n)]


def test_quantile_matches_numpy_default_linear_interpolation() -> None:
    xs = sorted([7.0, 1.0, 3.0, 5.0, 9.0, 11.0])
    assert quantile(xs, 0.5) == 6.0
    assert quantile(xs, 0.0) == 1.0 and quantile(xs, 1.0) == 11.0
    assert statistics.quantiles(xs, n=4, method="inclusive") == [quantile(xs, 0.25), quantile(xs, 0.5), quantile(xs, 0.75)]


def test_stats_of_known_data() -> None:
    data = [10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 100.0]
    s = Stats.of(data)
    assert (s.n, s.median, s.min, s.max) == (10, 14.5, 10.0, 100.0)
    assert s.mean == pytest.approx(statistics.fmean(data))
    assert s.stddev == pytest.approx(statistics.stdev(data))
    assert (s.q1, s.q3, s.iqr) == (12.25, 16.75, 4.5)
    assert s.cv == pytest.approx(s.stddev / s.mean)
    assert s.outliers == 1  # 100 is beyond q3 + 1.5 IQR
    # n = 10 at 95%: the 2nd and 9th order statistics, coverage 1 - 2 * 11/1024 (the textbook table).
    assert (s.ci_low, s.ci_high) == (11.0, 18.0)
    assert s.ci_coverage == pytest.approx(1 - 2 * 11 / 1024)
    assert s.ci_valid
    assert s.rel_ci == pytest.approx(max(14.5 - 11, 18 - 14.5) / 14.5)


def test_stats_json_round_trip_is_lossless() -> None:
    s = Stats.of(lognormal(random.Random(3), 501, 100.0, 0.1))
    assert Stats.from_json(json.loads(json.dumps(s.to_json()))) == s
    assert s.to_json()["iqr"] == s.iqr  # derived values are written for readers of the JSON


def test_stats_of_no_samples_is_an_error() -> None:
    with pytest.raises(ValueError):
        Stats.of([])


@pytest.mark.parametrize(
    "n,ranks",
    [(6, (0, 5)), (10, (1, 8)), (20, (5, 14)), (100, (39, 60))],  # the classic tables, 0-based
)
def test_median_ci_ranks_match_binomial_tables(n: int, ranks: tuple[int, int]) -> None:
    lo, hi, coverage = median_ci_ranks(n)
    assert (lo, hi) == ranks
    assert coverage >= 0.95


def test_median_ci_is_flagged_when_n_is_too_small_for_95_percent() -> None:
    lo, hi, coverage = median_ci_ranks(5)
    assert (lo, hi) == (0, 4) and coverage == pytest.approx(1 - 2 / 32)
    s = Stats.of([1.0, 2.0, 3.0, 4.0, 5.0])
    assert not s.ci_valid
    assert median_rel_ci([1.0, 2.0, 3.0, 4.0, 5.0]) == math.inf


def test_normal_approximation_joins_the_exact_ranks_smoothly() -> None:
    # Exact up to n = 1000, normal approximation above: both must give coverage just over 95%.
    for n in (999, 1000, 1001, 1002, 5000, 100_000):
        lo, hi, coverage = median_ci_ranks(n)
        assert hi == n - 1 - lo
        assert 0.95 <= coverage < 0.96, n
    assert median_ci_ranks(1001)[0] - median_ci_ranks(1000)[0] in (0, 1)


def test_median_ci_covers_the_true_median_at_the_stated_rate() -> None:
    # Exponential data (skewed, like timings): true median ln 2. 2,000 experiments of n = 40.
    rng = random.Random(11)
    lo, hi, coverage = median_ci_ranks(40)
    hits = 0
    for _ in range(2000):
        xs = sorted(rng.expovariate(1.0) for _ in range(40))
        hits += xs[lo] <= math.log(2) <= xs[hi]
    assert abs(hits / 2000 - coverage) < 0.015


@pytest.mark.parametrize("data", [[1.0, 2.0, 4.0], [1.0, 2.0, 4.0, 8.0]])
def test_median_sampler_draws_the_exact_bootstrap_distribution(data: list[float]) -> None:
    # Enumerate every resample with replacement (n^n of them) for the exact distribution of its median.
    n = len(data)
    exact = Counter(statistics.median(r) for r in itertools.product(data, repeat=n))
    total = n**n
    draw = median_sampler(data, random.Random(5))
    draws = Counter(draw() for _ in range(40_000))
    assert set(draws) <= set(exact)
    for value, count in exact.items():
        assert draws[value] / 40_000 == pytest.approx(count / total, abs=0.01), value


def test_speedup_ci_brackets_the_ratio_and_is_reproducible() -> None:
    rng = random.Random(1)
    eager, replay = lognormal(rng, 2000, 690.0, 0.05), lognormal(rng, 2000, 86.0, 0.05)
    point, low, high = speedup_ci(eager, replay)
    assert point == pytest.approx(statistics.median(eager) / statistics.median(replay))
    assert low < point < high
    assert 690 / 86 * 0.99 < low and high < 690 / 86 * 1.01
    assert speedup_ci(eager, replay) == (point, low, high)  # same seed, same answer
    assert speedup_ci(eager, replay, seed=1) != (point, low, high)


def test_speedup_ci_coverage_on_repeated_experiments() -> None:
    # 200 experiments with a known true ratio of medians (2.0): the 95% CI should catch it ~95% of the time.
    rng = random.Random(7)
    hits = 0
    for i in range(200):
        eager, replay = lognormal(rng, 200, 200.0, 0.2), lognormal(rng, 200, 100.0, 0.2)
        _, low, high = speedup_ci(eager, replay, resamples=1000, seed=i)
        hits += low <= 2.0 <= high
    assert 0.88 <= hits / 200 <= 0.99


def test_difference_ci() -> None:
    rng = random.Random(2)
    a, b = lognormal(rng, 1001, 700.0, 0.02), lognormal(rng, 1001, 100.0, 0.02)
    point, low, high = difference_ci(a, b)
    assert point == pytest.approx(statistics.median(a) - statistics.median(b))
    assert low < point < high and 590 < low and high < 610


def test_bootstrap_of_two_times_5000_samples_is_fast() -> None:
    rng = random.Random(0)
    eager, replay = lognormal(rng, 5000, 690.0, 0.1), lognormal(rng, 5000, 86.0, 0.1)
    start = time.perf_counter()
    speedup_ci(eager, replay, resamples=2000)
    assert time.perf_counter() - start < 0.5


def test_t_quantile_matches_tables() -> None:
    from cgtool.bench.stats import t_quantile

    for df, exact in ((4, 2.776), (7, 2.365), (30, 2.042), (1000, 1.962)):
        assert abs(t_quantile(0.975, df) / exact - 1) < 0.02


def test_batch_medians_and_their_ci() -> None:
    import math
    import random

    from cgtool.bench.stats import batch_medians, batch_ratio_ci, batch_rel_ci

    assert batch_medians([1.0] * 23) == [] and batch_rel_ci([1.0] * 23) == math.inf
    assert batch_medians(list(range(24))) == [1.0, 4.0, 7.0, 10.0, 13.0, 16.0, 19.0, 22.0]
    assert batch_rel_ci([5.0] * 40) == 0.0
    rng = random.Random(0)
    steady = [100 * math.exp(rng.gauss(0, 0.02)) for _ in range(800)]
    stepped = [x * (1.15 if i >= 400 else 1.0) for i, x in enumerate(steady)]
    assert batch_rel_ci(steady) < 0.005 < 0.05 < batch_rel_ci(stepped)
    replay = [40 * math.exp(rng.gauss(0, 0.01)) for _ in range(800)]
    assert batch_ratio_ci(steady, replay) < 1.005 and batch_ratio_ci(stepped, replay) > 1.05
    assert batch_ratio_ci(steady[:10], replay) is None
