"""Statistics of timing samples: summary, distribution-free median CI, bootstrap CIs. Pure; no I/O, no numpy.

Units are whatever the samples are in (cgtool uses microseconds). See docs/bench.md for the method.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from cgtool.model.codec import Record

# Above this n the binomial tail is replaced by its normal approximation (error < 0.1 order statistic).
_EXACT_BINOMIAL_MAX_N = 1000


def quantile(sorted_xs: Sequence[float], q: float) -> float:
    """The q-quantile of sorted data by linear interpolation (numpy's default, Hyndman-Fan type 7)."""
    if not sorted_xs:
        raise ValueError("quantile of no samples")
    pos = q * (len(sorted_xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def _binomial_half_cdf(n: int, j: int) -> float:
    """P(B <= j) for B ~ Binomial(n, 1/2)."""
    if j < 0:
        return 0.0
    if n <= _EXACT_BINOMIAL_MAX_N:
        log_half_n = -n * math.log(2.0)
        return min(1.0, sum(math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + log_half_n) for i in range(j + 1)))
    return NormalDist(n / 2, math.sqrt(n) / 2).cdf(j + 0.5)


def median_ci_ranks(n: int, confidence: float = 0.95) -> tuple[int, int, float]:
    """Ranks (0-based, into sorted data) bounding the median with at least `confidence`, and the exact coverage.

    The interval [x_(j), x_(n-1-j)] misses the population median only when at most j samples fall on one
    side of it, so it covers it with probability 1 - 2 P(B <= j), B ~ Binomial(n, 1/2), whatever the
    (continuous) distribution. j is the largest rank keeping coverage
    >= confidence. When n is too small for any such j (n < 6 at 95%), the ranks are the min and max and the
    coverage returned is what they actually give (below confidence).
    """
    if n < 1:
        raise ValueError("median CI of no samples")
    alpha = 1.0 - confidence
    if n > _EXACT_BINOMIAL_MAX_N:
        # Normal approximation, then step to the exact boundary with the same approximation.
        j = max(0, math.floor(n / 2 - NormalDist().inv_cdf(1 - alpha / 2) * math.sqrt(n) / 2) - 2)
        while j + 1 < n - 2 - j and 2 * _binomial_half_cdf(n, j + 1) <= alpha:
            j += 1
        while j > 0 and 2 * _binomial_half_cdf(n, j) > alpha:
            j -= 1
    else:
        j, cdf = -1, 0.0
        log_half_n = -n * math.log(2.0)
        while j + 1 <= n - 2 - j:
            nxt = cdf + math.exp(math.lgamma(n + 1) - math.lgamma(j + 2) - math.lgamma(n - j) + log_half_n)
            if 2 * nxt > alpha:
                break
            j, cdf = j + 1, nxt
        j = max(j, 0)
    return j, n - 1 - j, 1.0 - 2.0 * _binomial_half_cdf(n, j)


def median_rel_ci(sorted_xs: Sequence[float], confidence: float = 0.95) -> float:
    """Relative half-width of the median CI of sorted data (the larger side); inf when n is too small for it."""
    lo, hi, coverage = median_ci_ranks(len(sorted_xs), confidence)
    median = quantile(sorted_xs, 0.5)
    if coverage + 1e-12 < confidence:
        return math.inf
    if median == 0:
        return 0.0 if sorted_xs[lo] == sorted_xs[hi] == 0 else math.inf
    return max(median - sorted_xs[lo], sorted_xs[hi] - median) / abs(median)


# Batch medians (the batch-means method of simulation output analysis): the run is cut into BATCHES
# consecutive stretches, and the spread of their medians says how much the level moved during the run.
BATCHES = 8
_MIN_PER_BATCH = 3


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile, by the Cornish-Fisher expansion (within 2% of the exact value from df = 4 up)."""
    z = NormalDist().inv_cdf(p)
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def batch_medians(xs: Sequence[float], batches: int = BATCHES) -> list[float]:
    """Medians of `batches` consecutive, near-equal stretches of xs (in measuring order); [] when a stretch
    would hold fewer than 3 samples."""
    n = len(xs)
    if batches < 2 or n < _MIN_PER_BATCH * batches:
        return []
    return [quantile(sorted(xs[b * n // batches:(b + 1) * n // batches]), 0.5) for b in range(batches)]


def _log_half_width(logs: Sequence[float], confidence: float) -> float:
    k = len(logs)
    mean = math.fsum(logs) / k
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in logs) / (k - 1))
    return t_quantile(1 - (1 - confidence) / 2, k - 1) * sd / math.sqrt(k)


def batch_rel_ci(xs: Sequence[float], confidence: float = 0.95, batches: int = BATCHES) -> float:
    """Relative half-width of a CI of the level of xs from its batch medians (t interval on their logs).

    The order-statistic CI of the median assumes independent samples. Timings are not: a CPU slowed for
    seconds slows every sample in that stretch, and that CI then shrinks while the level moves. This one
    widens with such drift. inf when there are too few samples, 0 for positive constant data.
    """
    meds = batch_medians(xs, batches)
    if not meds or min(meds) <= 0:
        return math.inf if not meds or max(meds) > 0 else 0.0
    return math.expm1(_log_half_width([math.log(m) for m in meds], confidence))


def batch_ratio_ci(a: Sequence[float], b: Sequence[float], confidence: float = 0.95, batches: int = BATCHES) -> float | None:
    """Half-width, as a factor on the log scale, of a CI of median(a) / median(b) from the ratios of their
    batch medians stretch by stretch; None when there are too few samples (or a median is not positive)."""
    ma, mb = batch_medians(a, batches), batch_medians(b, batches)
    if not ma or not mb or min(ma) <= 0 or min(mb) <= 0:
        return None
    return math.exp(_log_half_width([math.log(x / y) for x, y in zip(ma, mb)], confidence))


@dataclass(frozen=True)
class Stats(Record):
    """Summary of one series of timing samples (one mode, one clock)."""

    JSON_COMPUTED = {"iqr": lambda s: s.iqr, "cv": lambda s: s.cv, "rel_ci": lambda s: _finite(s.rel_ci)}

    n: int
    median: float
    mean: float
    min: float
    max: float
    stddev: float  # sample standard deviation (n - 1); 0 for n = 1
    q1: float
    q3: float
    ci_low: float  # distribution-free CI of the median (order statistics)
    ci_high: float
    ci_coverage: float  # exact coverage of [ci_low, ci_high]; >= confidence unless n is tiny
    confidence: float  # the coverage asked for
    outliers: int  # Tukey: samples beyond 1.5 IQR outside the quartiles

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def cv(self) -> float:
        """Coefficient of variation, stddev / mean (0 when the mean is 0)."""
        return self.stddev / self.mean if self.mean else 0.0

    @property
    def rel_ci(self) -> float:
        """Relative half-width of the median CI: the larger side over the median (inf when the median is 0)."""
        if self.median == 0:
            return 0.0 if self.ci_low == self.ci_high == 0 else math.inf
        return max(self.median - self.ci_low, self.ci_high - self.median) / abs(self.median)

    @property
    def ci_valid(self) -> bool:
        """Whether the CI reaches the coverage asked for (False for tiny n)."""
        return self.ci_coverage + 1e-12 >= self.confidence

    @classmethod
    def of(cls, samples: Sequence[float], confidence: float = 0.95) -> Stats:
        xs = sorted(samples)
        n = len(xs)
        if n == 0:
            raise ValueError("statistics of no samples")
        mean = math.fsum(xs) / n
        var = math.fsum((x - mean) ** 2 for x in xs) / (n - 1) if n > 1 else 0.0
        q1, q3 = quantile(xs, 0.25), quantile(xs, 0.75)
        fence_lo, fence_hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
        lo, hi, coverage = median_ci_ranks(n, confidence)
        return cls(
            n=n,
            median=quantile(xs, 0.5),
            mean=mean,
            min=xs[0],
            max=xs[-1],
            stddev=math.sqrt(var),
            q1=q1,
            q3=q3,
            ci_low=xs[lo],
            ci_high=xs[hi],
            ci_coverage=coverage,
            confidence=confidence,
            outliers=sum(1 for x in xs if x < fence_lo or x > fence_hi),
        )


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def median_sampler(samples: Sequence[float], rng: random.Random) -> Callable[[], float]:
    """Draws from the exact bootstrap distribution of the median of `samples`, in O(1) per draw.

    A resample's k-th smallest value is the original's order statistic at index floor(n U_(k)), where
    U_(k) ~ Beta(k, n - k + 1) is the k-th smallest of n uniforms; given U_(k) = u, the next one is
    u + (1 - u) Beta(1, n - k). So no resample is ever built or sorted.
    """
    xs = sorted(samples)
    n = len(xs)
    if n == 0:
        raise ValueError("bootstrap of no samples")
    k = (n + 1) // 2

    def draw_odd() -> float:
        return xs[min(n - 1, int(rng.betavariate(k, n - k + 1) * n))]

    def draw_even() -> float:
        u = rng.betavariate(k, n - k + 1)
        v = u + (1.0 - u) * (1.0 - rng.random() ** (1.0 / (n - k)))  # Beta(1, n-k) by inversion
        return 0.5 * (xs[min(n - 1, int(u * n))] + xs[min(n - 1, int(v * n))])

    return draw_odd if n % 2 else draw_even


def bootstrap_medians(
    a: Sequence[float],
    b: Sequence[float],
    combine: Callable[[float, float], float],
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(point, low, high): combine(median(a), median(b)) with a percentile bootstrap CI, a and b resampled apart."""
    rng = random.Random(seed)
    draw_a, draw_b = median_sampler(a, rng), median_sampler(b, rng)
    point = combine(quantile(sorted(a), 0.5), quantile(sorted(b), 0.5))
    values = sorted(combine(draw_a(), draw_b()) for _ in range(resamples))
    alpha = 1.0 - confidence
    return point, quantile(values, alpha / 2), quantile(values, 1 - alpha / 2)


def speedup_ci(
    eager: Sequence[float], replay: Sequence[float], confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """(point, low, high) of median(eager) / median(replay), by percentile bootstrap."""
    return bootstrap_medians(eager, replay, _ratio, confidence, resamples, seed)


def difference_ci(
    a: Sequence[float], b: Sequence[float], confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """(point, low, high) of median(a) - median(b), by percentile bootstrap."""
    return bootstrap_medians(a, b, _difference, confidence, resamples, seed)


def _ratio(x: float, y: float) -> float:
    return x / y if y else math.inf


def _difference(x: float, y: float) -> float:
    return x - y


def busy_time(intervals: Sequence[tuple[float, float]]) -> float:
    """Length of the union of [start, end) intervals: time during which at least one of them was running."""
    total, end = 0.0, -math.inf
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total
