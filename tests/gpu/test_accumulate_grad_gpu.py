"""CG407 on one GPU (marker gpu): samples/hazards/accumulate_grad_setup.py keeps the loss of a setup step, so
backward reuses AccumulateGrad nodes made on the default stream. Plain PyTorch first (tests/gpu/accumulate_grad_truth.py:
PyTorch's own warning in warmup, then the capture, on the warmup stream and on torch.cuda.graph's own), then
`cgtool capture`: CG407 at the `.backward()` line, an error of kind made-before-warmup, confirmed by the capture
that failed as plain PyTorch's did; no generic CG501 beside it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT
from expect_markers import markers
from gpu.runs import read_json, save_artifact

pytestmark = pytest.mark.gpu
SAMPLE = os.path.join(ROOT, "samples", "hazards", "accumulate_grad_setup.py")
ENV = dict(os.environ, NO_COLOR="1", COLUMNS="200")


def plain(work: str, mode: str) -> dict:
    out = os.path.join(work, f"accumulate_grad_truth_{mode}.json")
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "gpu", "accumulate_grad_truth.py"), SAMPLE, out, mode],
                   cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120)
    return read_json(out) or {}


def test_accumulate_grad_made_in_setup_is_cg407_where_plain_capture_fails(work, measured):
    line = markers(SAMPLE)[0][0]
    truths = {mode: plain(work, mode) for mode in ("same", "own")}
    out = os.path.join(work, "accumulate_grad_cgtool")
    r = subprocess.run([sys.executable, "-m", "cgtool", "capture", SAMPLE, "--out", out], cwd=ROOT, env=ENV,
                       capture_output=True, text=True, timeout=300)
    data = read_json(os.path.join(out, "report.json")) or {}
    hits = [f for f in data.get("findings", []) if f["rule"] == "CG407"]
    save_artifact("accumulate-grad.txt", f"plain {json.dumps(truths, indent=1)}\ncgtool exit {r.returncode}\n"
                  f"{r.stdout[-4000:]}{r.stderr[-2000:]}")
    measured("plain: " + "; ".join(f"{m}: captured {t.get('captured')}, {t.get('capture_error')}, warned in "
                                    f"{[w['phase'] for w in t.get('warnings', []) if 'AccumulateGrad' in w['message']]}"
                                    for m, t in truths.items())
             + f" | cgtool exit {r.returncode}, {[(f['line'], f['severity'], f.get('kind'), f.get('evidence')) for f in hits]}")
    for t in truths.values():  # plain PyTorch: PyTorch's warning in warmup, and the capture fails
        assert t.get("captured") is False, t
        assert any("AccumulateGrad" in w["message"] and w["phase"] == "warmup" for w in t["warnings"]), t
    assert r.returncode == 1 and data.get("status") == "capture-failed", r.stdout[-3000:]
    assert hits and hits[0]["line"] == line and hits[0]["severity"] == "error", data.get("findings")
    assert hits[0].get("kind") == "made-before-warmup" and hits[0].get("evidence") == "confirmed", hits
    assert not [f for f in data["findings"] if f["rule"] == "CG501"], data["findings"]
