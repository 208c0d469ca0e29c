"""`cgtool bench` command-line behaviour without a GPU (the measurement itself is tested on the GPU)."""

import json
import os

import pytest
import torch
from conftest import ROOT

MLP = os.path.join(ROOT, "samples", "mlp_inference.py")


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only behaviour")
def test_no_gpu_is_exit_3_with_a_clear_message(run_cli, tmp_path):
    r = run_cli("bench", MLP, "--json")
    assert r.returncode == 3, r.stdout + r.stderr
    data = json.loads(r.stdout)
    assert data["kind"] == "cgtool-bench" and data["results"] == []
    assert "needs a CUDA device" in data["errors"][0]["message"]


@pytest.mark.parametrize("args, text", [
    (["--fail-if-slower", "5"], "--fail-if-slower needs --compare"),
    (["--sizes", "1,x"], "whole numbers"),
    (["--sizes", "0,2"], "positive"),
    (["--plot", "out.jpg"], ".svg or .png"),
    (["--sizes", "4:2"], "LOW <= HIGH"),
    (["--batch-range", "1:64"], "add --sizes"),
    (["--sizes", "1:8", "--batch-range", "9:2"], "LOW <= HIGH"),
    (["--sizes", "1:8", "--memory-budget", "lots"], "not a memory size"),
    (["--sizes", "1:8", "--memory-budget", "1GiB"], "add --histogram FILE or --batch-range"),
    (["--sizes", "1:8", "--max-sizes", "3"], "add --histogram FILE or --batch-range"),
    (["--sizes", "1:8", "--batch-range", "1:8", "--piecewise"], "not with --piecewise"),
])
def test_usage_errors_exit_2(run_cli, args, text):
    r = run_cli("bench", MLP, *args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert text in r.stderr


def test_bad_baseline_exit_2(run_cli, tmp_path):
    bad = tmp_path / "base.json"
    bad.write_text("{not json")
    r = run_cli("bench", MLP, "--compare", bad)
    assert r.returncode == 2
    assert "base.json" in r.stderr
    r = run_cli("bench", MLP, "--compare", tmp_path / "missing.json")
    assert r.returncode == 2 and "No such file" in r.stderr


def test_plan_from_a_sweep_table_json_and_plot(tmp_path, capsys):
    """The plan step after a sweep (no GPU needed: it plans from the measured report)."""
    from test_bench_render import result

    from cgtool.bench.result import BenchReport
    from cgtool.commands.bench import finish
    from cgtool.model.graph_memory import SharedPool
    from cgtool.worker.client import WorkerOutcome

    sizes = (1, 2, 4, 8, 16, 32, 64)
    report = BenchReport(tuple(result(400.0 + 2 * s, 50.0 + 3 * s, size=s, pool_bytes=(4 + s) << 20) for s in sizes),
                         shared_pool=SharedPool(tuple(reversed(sizes)), 80 << 20, 70 << 20, 90.0, 155 << 20))
    svg, out = tmp_path / "plan.svg", tmp_path / "bench.json"
    with pytest.raises(SystemExit) as done:
        finish(report, WorkerOutcome({}), None, None, str(svg), str(out), False, False, ({b: 1.0 for b in range(1, 65)}, 100 << 20, None))
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "capture sizes for the expected batches, budget 100.0 MiB" in text and "vLLM default" in text
    assert "recommended:" in text
    doc = json.loads(out.read_text())
    rec = doc["plan"]["sets"][0]
    assert rec["label"] == "recommended" and rec["memory_bytes"] <= 100 << 20 and rec["speedup"] > 1
    assert doc["shared_pool"]["pool_reserved"] == 80 << 20
    assert svg.read_text().startswith("<svg") and "graph pool (MiB)" in svg.read_text()
