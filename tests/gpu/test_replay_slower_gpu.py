"""Issue 36 on the GPU: a line whose work takes longer in replay than in eager, shown by `cgtool capture`.

Truth first: tests/gpu/slower_truth.py captures samples/replay_slower/wav2vec2_inference.py in plain PyTorch and
profiles replays and one eager step: the kernels only one side ran and their GPU time. On an H200 (torch 2.11,
transformers 5.17): eager runs SDPA's memory-efficient kernel (fmha_cutlassF, 2 x 38.7 us), replay an explicit mask
(arange, compares) and SDPA's math path (sgemm, softmax: 124 us in all), because transformers' masking_utils
builds the mask whenever `is_tracing()`, which holds while a CUDA stream captures; the convolutions run the same
kernels both ways. Against it: capture's table "lines slower in replay than eager" and report.json's
node_lines.replay_slower_lines name the attention line with eager's fmha kernel, and no convolution line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from gpu.runs import WORK, cgtool_run, read_json, save_artifact

pytestmark = pytest.mark.gpu
SAMPLE = "samples/replay_slower/wav2vec2_inference.py"


def truth(script: str, benchmark: bool = False) -> dict:
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "gpu", "slower_truth.py"), script,
                        "1" if benchmark else "0"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_the_line_slower_in_replay_is_shown(measured):
    real = truth(SAMPLE)
    save_artifact("issue36-slower.json", json.dumps({"default": real, "cudnn.benchmark": truth(SAMPLE, True)}))
    measured("plain PyTorch: kernels only one side ran", only_eager=real["only_eager"], only_replay=real["only_replay"],
             conv=real["conv"], eager_us=real["eager_us"], replay_us=real["replay_us"])
    assert real["match"]
    # the reproduction: replay runs other kernels than eager, and they take longer
    assert real["only_replay"] and real["only_replay_us"] > 1.3 * real["only_eager_us"], real
    out = os.path.join(WORK, "issue36", "slower")
    r = cgtool_run("capture", SAMPLE, "--out", out, timeout=400)
    save_artifact("issue36-slower-capture.txt", r.stdout + r.stderr)
    report = read_json(os.path.join(out, "report.json")) or {}
    rows = (report.get("node_lines") or {}).get("replay_slower_lines") or []
    frames = (report.get("node_lines") or {}).get("frames") or []
    shown = [(frames[x["frame"]]["file"].rsplit("/", 1)[-1], frames[x["frame"]]["line"], frames[x["frame"]]["source"],
              x["eager_us"], x["replay_us"], x["cause"], x["eager_kernels"], x["replay_kernels"]) for x in rows]
    measured("cgtool capture: replay_slower_lines", rows=shown)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "lines slower in replay than eager" in r.stdout
    assert rows, r.stdout[-3000:]
    attention = [x for x in shown if "scaled_dot_product_attention" in x[2]]
    assert attention, shown
    assert attention[0][5] == "other kernels" and any("fmha" in k for k in attention[0][6]), attention
    assert any("gemm" in k or "softmax" in k for k in attention[0][7]), attention
    assert attention[0][4] >= 1.3 * attention[0][3]
    # the convolutions' kernels together (plain PyTorch): where replay's are not slower beyond the margins, no
    # convolution line is called slower (all of a model's Conv1d are one line, conv.py:370)
    if real["conv_replay_us"] < 1.3 * real["conv_eager_us"] or real["conv_replay_us"] - real["conv_eager_us"] < 10:
        assert not [x for x in shown if "conv" in x[2]], (shown, real["conv_eager_us"], real["conv_replay_us"])
