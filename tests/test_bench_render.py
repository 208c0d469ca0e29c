"""Console rendering of bench results: the verdict line, the tables, the comparison (formatting only)."""

from __future__ import annotations

from dataclasses import replace

from rich.console import Console

from cgtool.bench.adaptive import BUDGET, CONVERGED, ITERATIONS, RoundStatus
from cgtool.bench.compare import REGRESSED, SAME, Comparison, SizeChange
from cgtool.bench.estimate import Estimate, ModeResult
from cgtool.bench.result import BenchReport, BenchResult
from cgtool.bench.stats import Stats
from cgtool.render.bench import (
    detail_lines,
    fmt_x,
    progress_text,
    render_bench,
    stopped_phrase,
    sweep_verdict,
    verdict_line,
)


def stats(median: float, n: int = 200, spread: float = 0.01) -> Stats:
    d = median * spread
    return Stats(n, median, median, median - 4 * d, median + 6 * d, d, median - d, median + d, median - d / 2, median + d / 2, 0.951, 0.95, 2)


def result(eager: float = 690.0, replay: float = 86.0, size: int | None = None, **kw: object) -> BenchResult:
    base = BenchResult(
        script="samples/mlp.py",
        entry="main",
        size=size,
        eager=ModeResult("eager", stats(eager * 0.9), stats(eager), 4000),
        replay=ModeResult("replay", stats(replay * 0.95), stats(replay), 4000),
        speedup_gpu=Estimate(eager * 0.9 / (replay * 0.95), 7.5, 7.7),
        speedup_wall=Estimate(eager / replay, 7.93, 8.11),
        overhead_saved_us=Estimate(eager - replay, eager - replay - 4, eager - replay + 4),
        stopped_by=CONVERGED,
        rounds=200,
        elapsed_s=3.21,
        target_rel_ci=0.01,
        capture_ms=12.5,
        instantiate_ms=3.2,
        pool_bytes=64 << 20,
        environment={"gpu": "NVIDIA H100 80GB HBM3", "capability": "9.0", "python": "3.11.7"},
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def rendered(report: BenchReport, comparison: Comparison | None = None, quiet: bool = False) -> str:
    out = Console(record=True, width=160, no_color=True)
    render_bench(report, out, comparison, quiet)
    return out.export_text()


def test_verdict_line() -> None:
    assert verdict_line(result()) == "eager 690 µs → replay 86 µs per iteration: 8.0× faster (95% CI 7.9–8.1×), converged after 4,000 iterations"
    assert verdict_line(result(size=8)).startswith("size 8: eager 690 µs")
    assert verdict_line(result(), clock="gpu").startswith("eager 621 µs → replay 82 µs per iteration: 7.6× faster (95% CI 7.5–7.7×)")


def test_verdict_when_replay_is_slower_or_no_different() -> None:
    slower = result(eager=100.0, replay=125.0, speedup_wall=Estimate(0.8, 0.78, 0.82))
    assert "1.25× slower (95% CI 1.22–1.28×)" in verdict_line(slower)
    same = result(eager=100.0, replay=99.0, speedup_wall=Estimate(1.01, 0.98, 1.04))
    assert "no clear difference, 1.01× (95% CI 0.98–1.04×)" in verdict_line(same)


def test_stopped_phrases() -> None:
    assert stopped_phrase(result(stopped_by=BUDGET)) == "time budget ran out after 4,000 iterations (CI ±0.5%, target ±1.0%)"
    assert stopped_phrase(result(stopped_by=ITERATIONS)) == "stopped at the cap of 4,000 iterations (CI ±0.5%, target ±1.0%)"
    assert stopped_phrase(result(stopped_by=ITERATIONS, target_rel_ci=None)) == "after 4,000 iterations"  # --iters


def test_single_result_report() -> None:
    text = rendered(BenchReport((result(),)))
    assert "cgtool bench samples/mlp.py:main" in text
    assert "NVIDIA H100 80GB HBM3 (sm 9.0)" in text
    for cell in ("eager", "replay", "GPU", "wall", "200", "690 µs", "86 µs", "IQR", "CV"):
        assert cell in text
    assert "launch overhead saved: 604 µs per iteration (95% CI 600 µs to 608 µs)" in text
    assert "capture 12.5 ms · instantiate 3.2 ms · graph pool 64.0 MiB" in text
    assert text.rstrip().endswith("converged after 4,000 iterations")


def test_floor_share_names_its_source() -> None:
    measured, estimated = detail_lines(result(gpu_floor_us=70.0))[2], detail_lines(result())[2]
    assert measured.startswith("replay runs at 81.4% of GPU-bound speed") and "GPU busy time of the replay's kernels" in measured
    assert "no kernel busy time measured" in estimated


def test_a_floor_replay_beats_is_not_used() -> None:
    """wav2vec2 showed 129.8% of GPU-bound speed with summed kernel times: the floor is the least figure now."""
    above = result(gpu_floor_us=112.0)  # kernel figure above replay's GPU (81.7 µs) and wall (86 µs) times
    assert above.floor_source == "replay-gpu" and above.replay_floor_share <= 1.0
    noisy = replace(above, replay=ModeResult("replay", stats(90.0), stats(86.0), 4000))  # GPU time above wall by noise
    assert noisy.floor_source == "replay-wall" and noisy.replay_floor_share == 1.0
    assert "replay runs at 100.0% of GPU-bound speed" in detail_lines(noisy)[2]


def test_memory_lines_and_table() -> None:
    from cgtool.model.graph_memory import GraphMemory, SharedPool
    from cgtool.render.bench import pool_text, shared_pool_line

    mem = GraphMemory(34 << 20, 30 << 20, 8 << 10, 64 << 10, 33 << 20)
    assert pool_text(result(memory=mem)) == ("graph pool 34.0 MiB (30.0 MiB in live tensors) · static inputs 8.0 KiB, "
                                             "output 64.0 KiB · capture peak 33.0 MiB")
    report = BenchReport(tuple(result(size=s, memory=mem, pool_bytes=mem.pool_reserved) for s in (1, 2)),
                         shared_pool=SharedPool((2, 1), 40 << 20, 31 << 20, 25.0, 68 << 20))
    text = rendered(report)
    assert "memory and capture by size" in text and "34.0 MiB" in text
    assert shared_pool_line(report) == ("2 sizes in one pool, captured largest first: 40.0 MiB (31.0 MiB in live tensors; "
                                        "separate pools: 68.0 MiB, 1.7× more); capture 25 ms")
    back = BenchReport.from_json(report.to_json())
    assert back.shared_pool == report.shared_pool and [r.memory for r in back.results] == [mem, mem]


def test_sweep_report_table_and_verdict() -> None:
    report = BenchReport(tuple(result(600 + 10 * s, 40 + 8 * s, size=s, speedup_wall=Estimate((600 + 10 * s) / (40 + 8 * s), 1.5, 20)) for s in (1, 2, 4)))
    text = rendered(report)
    assert "speedup by size (wall time)" in text
    assert "12.7×" in text and "8.9×" in text and "1.50–20.0×" in text
    assert sweep_verdict(report) == "replay is 8.9–12.7× faster across sizes 1–4 (most at size 1); 3 of 3 sizes converged"


def test_comparison_table_and_regression_line() -> None:
    changes = (
        SizeChange(1, "gpu", 80.0, 88.0, Estimate(0.10, 0.08, 0.12), 8.0, 7.3, REGRESSED),
        SizeChange(2, "gpu", 90.0, 90.5, Estimate(0.005, -0.01, 0.02), 7.0, 7.0, SAME),
    )
    comparison = Comparison(changes, pct=5.0, only_in_baseline=(16,), notes=("gpu: baseline NVIDIA A100, this run NVIDIA H100",))
    text = rendered(BenchReport((result(size=1), result(size=2))), comparison)
    assert "replay time against the baseline (GPU)" in text
    assert "+10.0%" in text and "+8.0% to +12.0%" in text and "8.0× → 7.3×" in text
    assert "regression: replay is slower beyond the CI and 5% at size 1 (+10.0%)" in text
    assert "not measured this time: sizes 16" in text
    assert "note: gpu: baseline NVIDIA A100" in text


def test_quiet_prints_only_the_verdict() -> None:
    text = rendered(BenchReport((result(),)), quiet=True)
    assert text.strip().splitlines() == [verdict_line(result())]


def test_progress_text_and_formats() -> None:
    p = RoundStatus(12, 3.2, 10.0, 1200, 1_000_000, 0.023, 0.01)
    assert progress_text(p) == "round 12 · 1,200 iterations · CI ±2.3% (target ±1.0%) · 3.2 / 10 s"
    assert "CI pending" in progress_text(replace(p, worst_rel_ci=float("inf")))
    assert (fmt_x(8.04), fmt_x(1.034), fmt_x(float("inf"))) == ("8.0×", "1.03×", "∞×")
