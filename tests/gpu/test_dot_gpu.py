"""`cgtool dot` on the real graphs of a GPU capture: the summary of deep_1000's driver DOT (3,000 nodes), and
`--diff --fail-on-growth` between two reports."""

import os
import time

import pytest

pytestmark = pytest.mark.gpu


def test_dot_summary_of_the_real_deep_1000_driver_dot(sample_capture, cgtool, measured):
    _r, out, _wall = sample_capture("deep_1000")
    path = os.path.join(out, "graph.driver.dot")
    assert os.path.exists(path)
    t0 = time.perf_counter()
    r = cgtool("dot", path, timeout=120)
    wall = time.perf_counter() - t0
    measured(" ".join(ln.strip() for ln in r.stdout.splitlines() if "×" in ln)[:200], wall_s=round(wall, 2))
    assert r.returncode == 0, r.stderr
    assert "×" in r.stdout  # folded repeats


def test_dot_diff_fails_on_growth(sample_capture, cgtool):
    a = os.path.join(sample_capture("mlp_inference")[1], "report.json")
    b = os.path.join(sample_capture("deep_1000")[1], "report.json")
    r = cgtool("dot", a, "--diff", b, "--fail-on-growth", "10", timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
