"""The sweep plot: a self-made SVG (always), PNG through matplotlib (when installed)."""

from __future__ import annotations

import itertools
import math
import random
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cgtool.bench.adaptive import CONVERGED, AdaptiveResult
from cgtool.bench.plot import log_ticks, nice_step, plot_sweep
from cgtool.bench.result import BenchReport, BenchResult
from cgtool.errors import CgtoolError

SVG = "{http://www.w3.org/2000/svg}"


def sweep(sizes: list[int | None]) -> BenchReport:
    rng = random.Random(0)
    results = []
    for s in sizes:
        eager, replay = 600 + 15 * (s or 1), 40 + 9 * (s or 1)

        def series(median: float) -> list[float]:
            return [median * math.exp(rng.gauss(0, 0.02)) for _ in range(60)]

        samples = {"eager": {"gpu": series(eager * 0.9), "wall": series(eager)}, "replay": {"gpu": series(replay), "wall": series(replay * 1.05)}}
        rounds = AdaptiveResult(samples, {"eager": 1200, "replay": 1200}, 60, 1.0, CONVERGED, 0.01, 0.95)
        results.append(BenchResult.from_rounds(rounds, script="samples/mlp.py", entry="main", size=s, environment={"gpu": "NVIDIA H100 <80GB>"}))
    return BenchReport(tuple(results))


def test_svg_has_axes_ticks_legend_and_one_point_per_size(tmp_path: Path) -> None:
    path = plot_sweep(sweep([1, 2, 4, 8, 16]), tmp_path / "sweep.svg")
    root = ET.parse(path).getroot()  # well-formed XML, title escaped
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "cgtool bench: mlp.py on NVIDIA H100 <80GB>" in texts
    for size in ("1", "2", "4", "8", "16"):
        assert texts.count(size) == 2  # x ticks under both panels
    for label in ("eager, wall", "eager, GPU", "replay, wall", "replay, GPU", "speedup, wall (95% CI)", "speedup, GPU"):
        assert label in texts
    assert "time per iteration (µs)" in texts and "size (log₂ scale)" in texts
    assert any(t and t.endswith("×") for t in texts)  # speedup ticks
    lines = list(root.iter(f"{SVG}polyline"))
    assert len(lines) == 6 and all(len(line.get("points", "").split()) == 5 for line in lines)
    assert len(list(root.iter(f"{SVG}polygon"))) == 1  # the CI band


def test_sizes_are_evenly_spaced_on_a_log2_axis(tmp_path: Path) -> None:
    root = ET.parse(plot_sweep(sweep([1, 2, 4, 8]), tmp_path / "s.svg")).getroot()
    xs = [float(p.split(",")[0]) for p in next(root.iter(f"{SVG}polyline")).get("points", "").split()]
    gaps = [b - a for a, b in itertools.pairwise(xs)]
    assert max(gaps) - min(gaps) < 0.2


def test_a_single_size_still_draws(tmp_path: Path) -> None:
    root = ET.parse(plot_sweep(sweep([8]), tmp_path / "one.svg")).getroot()
    assert len(list(root.iter(f"{SVG}circle"))) == 6


def test_png_through_matplotlib(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = plot_sweep(sweep([1, 2, 4]), tmp_path / "sweep.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_png_without_matplotlib_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib...` raise ImportError
    with pytest.raises(CgtoolError) as err:
        plot_sweep(sweep([1, 2]), tmp_path / "sweep.png")
    assert err.value.exit_code == 3 and "install matplotlib" in err.value.message and ".svg" in err.value.message


@pytest.mark.parametrize(
    "sizes,name,message",
    [([1, 2], "sweep.pdf", ".svg or .png"), ([None], "sweep.svg", "--sizes")],
)
def test_bad_plot_requests_are_user_errors(tmp_path: Path, sizes: list[int | None], name: str, message: str) -> None:
    with pytest.raises(CgtoolError) as err:
        plot_sweep(sweep(sizes), tmp_path / name)
    assert message in err.value.message and err.value.exit_code == 2


def test_unwritable_path_is_an_environment_error(tmp_path: Path) -> None:
    with pytest.raises(CgtoolError) as err:
        plot_sweep(sweep([1, 2]), tmp_path / "missing-dir" / "sweep.svg")
    assert err.value.exit_code == 3


def test_ticks() -> None:
    assert nice_step(13.0) == 2 and nice_step(0.9) == 0.2
    assert log_ticks(40, 1200) == [50, 100, 200, 500, 1000]
    assert log_ticks(1, 1e6) == [1, 10, 100, 1000, 10_000, 100_000, 1_000_000]
    assert log_ticks(190, 400) == [200, 250, 300, 350, 400]  # within one 1-2-5 step: even ticks
