"""A learning-rate scheduler inside a training step, on one GPU (marker gpu): plain PyTorch first
(tests/gpu/scheduler_truth.py: capture, then 6 steps of eager and of replay from the same state, the scheduler's
Python state put back between them), then `cgtool capture` on the same script. A schedule computed on the host
(SGD's float lr under StepLR, CosineAnnealingLR writing a tensor lr) differs in replay and cgtool says CG402 with
a replay mismatch; StepLR(step_size=1) on a tensor lr (`lr * gamma` on the device at every step) replays as eager
does and cgtool finds no error. The CPU side of the same findings: tests/test_changing_numbers.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT
from test_changing_numbers import SGD, STEP

from gpu.runs import cgtool_run, read_json, save_artifact

pytestmark = pytest.mark.gpu
ADAMW = "torch.optim.AdamW(model.parameters(), lr=torch.tensor(0.05, device=device), capturable=True)"
CASES = [  # (label, optimizer, scheduler, does replay match eager)
    ("sgd_steplr", SGD, "torch.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)", False),
    ("adamw_cosine", ADAMW, "torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)", False),
    ("adamw_steplr1", ADAMW, "torch.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)", True),
]


def truth(script: str) -> dict:
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "gpu", "scheduler_truth.py"), script, "6"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    save_artifact("scheduler-truth.txt", f"== {script}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("TRUTH ")), None)
    assert line, (r.stdout + r.stderr)[-3000:]
    return json.loads(line[6:])


@pytest.mark.parametrize("label,opt,sched,matches", CASES, ids=[c[0] for c in CASES])
def test_scheduler_in_the_step_judged_beside_plain_pytorch(work, measured, label, opt, sched, matches):
    script = os.path.join(work, f"sched_{label}.py")
    with open(script, "w", encoding="utf-8") as fh:
        fh.write(STEP.format(opt=opt, sched=sched))
    real = truth(script)
    out = os.path.join(work, f"sched_{label}_out")
    r = cgtool_run("capture", script, "--out", out, timeout=300)
    rep = read_json(os.path.join(out, "report.json")) or {}
    replay = rep.get("replay") or {}
    errors = [(f["rule"], f["line"]) for f in rep.get("findings", []) if f["severity"] == "error"]
    save_artifact("scheduler-cgtool.txt", f"== {label}: exit {r.returncode}\n{r.stdout[-3000:]}{r.stderr[-1500:]}")
    measured(f"{label}: plain PyTorch match={real['match']} at {real['first_differing_step']} "
             f"(max abs by step {real['max_abs_by_step']}); cgtool exit {r.returncode}, replay "
             f"{replay.get('status')} at {replay.get('first_differing_step')}, errors {errors}")
    assert real["match"] is matches, real
    assert replay.get("status") == ("match" if matches else "mismatch"), (replay, r.stdout[-3000:])
    if matches:
        assert errors == [] and r.returncode == 0, r.stdout[-3000:]
    else:
        assert r.returncode == 1 and any(rule == "CG402" for rule, _ in errors), r.stdout[-3000:]
