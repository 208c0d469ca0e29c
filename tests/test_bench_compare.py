"""Bench records round-trip through JSON; comparison against a (doctored) baseline drives the CI gate."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from cgtool.bench.adaptive import CONVERGED, AdaptiveResult
from cgtool.bench.compare import FASTER, REGRESSED, SAME, SLOWER, Comparison, compare, relative_change
from cgtool.bench.report_file import read_bench_report
from cgtool.bench.estimate import Estimate
from cgtool.bench.result import BenchReport, BenchResult
from cgtool.bench.stats import Stats
from cgtool.errors import CgtoolError
from cgtool.model.frame import Frame
from cgtool.model.report import ErrorRecord

H100 = {"gpu": "NVIDIA H100 80GB HBM3", "driver": "13.0", "torch": "2.11.0"}


def make_result(size: int | None, eager_us: float, replay_us: float, n: int = 400, noise: float = 0.02, seed: int = 0, **kw: Any) -> BenchResult:
    rng = random.Random(seed)

    def series(median: float) -> list[float]:
        return [median * math.exp(rng.gauss(0, noise)) for _ in range(n)]

    samples = {
        "eager": {"gpu": series(eager_us * 0.9), "wall": series(eager_us)},
        "replay": {"gpu": series(replay_us), "wall": series(replay_us * 1.02)},
    }
    rounds = AdaptiveResult(samples, {"eager": 20 * n, "replay": 20 * n}, n, 3.5, CONVERGED, 0.01, 0.95)
    return BenchResult.from_rounds(rounds, script="samples/mlp.py", entry="main", size=size, environment=kw.pop("environment", H100), **kw)


def make_report(sizes: list[int | None], noise: float = 0.02, n: int = 400, seed: int = 0) -> BenchReport:
    results = tuple(make_result(s, 600 + 10 * (s or 1), 40 + 8 * (s or 1), n=n, noise=noise, seed=seed + (s or 0)) for s in sizes)
    return BenchReport(results, settings={"sizes": sizes, "budget_s": 10.0}, cgtool_version="0.1.0")


def doctored(report: BenchReport, replay_factor: float) -> BenchReport:
    """The report as JSON with every replay time multiplied by replay_factor (a hand-edited baseline)."""
    d = json.loads(json.dumps(report.to_json()))
    for r in d["results"]:
        for clock in ("gpu", "wall"):
            for key in ("median", "mean", "min", "max", "q1", "q3", "ci_low", "ci_high", "stddev"):
                r["replay"][clock][key] *= replay_factor
    return BenchReport.from_json(d)


def test_bench_report_json_round_trip_is_lossless(tmp_path: Path) -> None:
    result = make_result(8, 690.0, 86.0, gpu_floor_us=70.0, capture_ms=12.5, instantiate_ms=3.25, pool_bytes=64 << 20)
    error = ErrorRecord("capture", "OutOfMemoryError", "CUDA out of memory", (Frame("s.py", 3, "step", "x @ w"),))
    report = BenchReport((result, make_result(None, 10.0, 5.0)), settings={"l2_flush": True}, errors=(error,), cgtool_version="0.1.0")
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(report.to_json()))
    assert read_bench_report(path) == report
    d = report.to_json()
    assert d["kind"] == "cgtool-bench" and d["schema"] == 1
    assert d["results"][0]["floor_source"] == "kernels" and d["results"][1]["floor_source"] == "replay-gpu"


def test_bench_result_definitions() -> None:
    r = make_result(None, 690.0, 86.0, gpu_floor_us=70.0)
    assert r.speedup_wall.point == pytest.approx(r.eager.wall.median / r.replay.wall.median)
    assert r.speedup_gpu.point == pytest.approx(r.eager.gpu.median / r.replay.gpu.median)
    assert r.overhead_saved_us.point == pytest.approx(r.eager.wall.median - r.replay.wall.median)
    assert r.replay_floor_share == pytest.approx(70.0 / r.replay.wall.median)
    assert r.iterations == 8000 and r.eager.iterations == 8000 and r.eager.gpu.n == 400
    assert make_result(None, 690.0, 86.0).floor_us == pytest.approx(make_result(None, 690.0, 86.0).replay.gpu.median)


def test_unbounded_estimates_survive_json() -> None:
    e = Estimate(2.0, 0.5, math.inf)
    assert json.dumps(e.to_json()) == '{"point": 2.0, "low": 0.5, "high": null, "confidence": 0.95}'
    assert Estimate.from_json(e.to_json()) == e


def test_same_run_twice_is_not_a_change() -> None:
    report = make_report([1, 2, 4])
    comparison = compare(report, report, pct=5)
    assert [c.status for c in comparison.changes] == [SAME] * 3
    assert all(c.change.point == 0 and c.change.low < 0 < c.change.high for c in comparison.changes)
    assert not comparison.regressed()


def test_doctored_faster_baseline_fails_the_gate_beyond_pct(tmp_path: Path) -> None:
    current = make_report([1, 2, 4])
    baseline_path = tmp_path / "baseline.json"
    baseline_path.write_text(json.dumps(doctored(current, 1 / 1.10).to_json()))  # replay was 10% faster then
    comparison = compare(current, read_bench_report(baseline_path), pct=5)
    assert [c.status for c in comparison.changes] == [REGRESSED] * 3
    assert all(c.change.point == pytest.approx(0.10) and 0.08 < c.change.low for c in comparison.changes)
    assert comparison.regressed() and len(comparison.regressions()) == 3
    # The same slowdown passes a looser gate: significant, but within 15%.
    assert not comparison.regressed(15)
    assert [c.status for c in compare(current, read_bench_report(baseline_path), pct=15).changes] == [SLOWER] * 3


def test_slowdown_within_the_noise_passes_the_gate() -> None:
    # 3% slower, but measured with 30% noise on 30 samples: the CI of the change includes 0.
    current = make_report([1, 2], noise=0.3, n=30)
    comparison = compare(current, doctored(current, 1 / 1.03), pct=0)
    assert all(c.change.point == pytest.approx(0.03) for c in comparison.changes)
    assert all(c.change.low < 0 < c.change.high for c in comparison.changes)
    assert [c.status for c in comparison.changes] == [SAME, SAME]
    assert not comparison.regressed(0)


def test_faster_is_reported_and_never_fails() -> None:
    current = make_report([4])
    comparison = compare(current, doctored(current, 1.2), pct=0)
    assert comparison.changes[0].status == FASTER
    assert comparison.changes[0].change.point == pytest.approx(1 / 1.2 - 1)
    assert not comparison.regressed()


def test_sizes_and_environment_differences_are_listed() -> None:
    current = make_report([1, 2, 4])
    base = make_report([2, 4, 8])
    base = BenchReport(tuple(BenchResult.from_json({**r.to_json(), "environment": {**H100, "gpu": "NVIDIA A100"}}) for r in base.results))
    comparison = compare(current, base)
    assert [c.size for c in comparison.changes] == [2, 4]
    assert comparison.only_in_baseline == (8,) and comparison.only_in_current == (1,)
    assert comparison.notes == ("gpu: baseline NVIDIA A100, this run NVIDIA H100 80GB HBM3",)
    assert Comparison.from_json(json.loads(json.dumps(comparison.to_json()))) == comparison


def test_a_cpu_slower_at_its_best_than_in_the_baseline_is_noted() -> None:
    import dataclasses

    from cgtool.bench.cpu_load import CpuLoad

    def with_floor(report: BenchReport, floor: float) -> BenchReport:
        load = CpuLoad(floor, floor * 1.25, 400, 0, 1.1, False, 600.0, 40.0, 15.0)
        return BenchReport(tuple(dataclasses.replace(r, cpu_load=load) for r in report.results))

    base = with_floor(make_report([1]), 104.0)
    assert compare(with_floor(make_report([1]), 108.0), base).notes == ()  # within the probe's own spread
    slower = compare(with_floor(make_report([1]), 130.0), base).notes
    assert slower == ("the CPU ran 25% slower at its best than during the baseline (pure-Python probe): eager times "
                      "and speedups move with it, replay times hardly",)
    assert "faster at its best" in compare(with_floor(make_report([1]), 80.0), base).notes[0]


def test_wall_clock_comparison() -> None:
    current = make_report([None])
    change = compare(current, doctored(current, 0.5), clock="wall").changes[0]
    assert change.clock == "wall" and change.current_us == current.results[0].replay.wall.median
    assert change.status == REGRESSED  # twice as slow on any threshold below 100%


def test_change_ci_covers_no_change_at_about_the_stated_rate() -> None:
    # 400 pairs of independent runs of the same distribution: the CI of the change should contain 0 ~95%.
    rng = random.Random(9)
    hits = 0
    for _ in range(400):
        a = Stats.of([100 * math.exp(rng.gauss(0, 0.05)) for _ in range(101)])
        b = Stats.of([100 * math.exp(rng.gauss(0, 0.05)) for _ in range(101)])
        change = relative_change(a, b)
        hits += change.low <= 0 <= change.high
    assert 0.92 <= hits / 400 <= 0.995


@pytest.mark.parametrize(
    "content,message",
    [
        (None, "No such file"),
        ("{not json", "not valid JSON"),
        ('{"schema": 1, "script": "s.py", "entry": "main", "status": "captured"}', "not a usable cgtool bench report"),
        ('[1, 2]', "not a usable cgtool bench report"),
    ],
)
def test_unreadable_baselines_are_user_errors(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "baseline.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(CgtoolError) as err:
        read_bench_report(path)
    assert message in err.value.message and err.value.exit_code == 2
