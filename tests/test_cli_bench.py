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
