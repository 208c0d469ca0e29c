"""A learning-rate scheduler inside the step (cgtool/checks/changing_numbers.py), on the CPU analysis: the number that
changes is named as the optimizer's or the scheduler's, at the user's line, with the fix that works for it; a schedule
computed on the device alone (StepLR with step_size=1 on a tensor lr) is not reported."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from cgtool.pipeline.cpu_analysis import analyze_on_cpu  # noqa: E402
from cgtool.script.contract import load_script  # noqa: E402

STEP = '''import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
    opt = {opt}
    sched = {sched}
    return {{"model": model, "opt": opt, "sched": sched}}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {{"x": torch.randn(8, 16, generator=g).to(device), "y": torch.randn(8, 1, generator=g).to(device)}}


def step(model, opt, sched, x, y):
    opt.zero_grad(set_to_none=False)
    nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    sched.step()
'''
OPT_LINE, SCHED_LINE = (STEP.splitlines().index(f"    {call}") + 1 for call in ("opt.step()", "sched.step()"))
SGD = "torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)"
ADAMW_TENSOR_LR = "torch.optim.AdamW(model.parameters(), lr=torch.tensor(1e-3, device=device), capturable=True)"
USER_FILL = '''import torch


def setup(device):
    return {"lr": torch.tensor(1e-3, device=device), "w": torch.ones(4, device=device), "box": {"k": 0}}


def step(lr, w, box):
    box["k"] += 1
    lr.fill_(0.1 / box["k"])
    return w * lr
'''


def errors_of(tmp_path, text: str) -> list:
    path = tmp_path / "step.py"
    path.write_text(text)
    trace, findings, errors = analyze_on_cpu(load_script(str(path)))
    assert not errors and trace.tracer_error is None, errors
    return [f for f in findings if f.severity == "error"]


def test_sgd_under_a_scheduler_names_the_optimizers_number(tmp_path):
    (f,) = errors_of(tmp_path, STEP.format(opt=SGD, sched="torch.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)"))
    assert (f.rule, f.line, f.kind) == ("CG402", OPT_LINE, "python-number")
    assert f.message.startswith("the optimizer passes a Python number that changes between iterations to `Tensor.add_`")
    assert "(-0.05 then -0.025)" in f.message and "scheduler's learning rate" in f.message
    assert f.library and f.library.startswith("torch/optim/sgd.py:")
    assert "capturable=True" in f.hint and "SGD" in f.hint and "optimizer step eagerly" in f.hint


@pytest.mark.parametrize("sched", ["torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)",
                                   "torch.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0 / (1 + e))"])
def test_a_scheduler_computing_on_the_host_is_named_at_its_line(tmp_path, sched):
    (f,) = errors_of(tmp_path, STEP.format(opt=ADAMW_TENSOR_LR, sched=sched))
    assert (f.rule, f.line) == ("CG402", SCHED_LINE)
    assert f.message.startswith("the learning-rate scheduler passes a Python number") and "does not move" in f.message
    assert f.library and f.library.startswith("torch/optim/lr_scheduler.py:")
    assert f.hint.startswith("Step the scheduler outside the captured step, after each replay")


def test_one_cycle_names_both_the_betas_and_the_schedule(tmp_path):
    found = errors_of(tmp_path, STEP.format(
        opt=ADAMW_TENSOR_LR, sched="torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.01, total_steps=1000)"))
    by_line = {f.line: f for f in found}
    assert set(by_line) == {OPT_LINE, SCHED_LINE} and all(f.rule == "CG402" for f in found)
    assert by_line[OPT_LINE].message.startswith("the optimizer passes") and "cycle_momentum=False" in by_line[OPT_LINE].hint
    assert by_line[SCHED_LINE].message.startswith("the learning-rate scheduler passes")


def test_a_scheduler_branching_on_its_epoch_is_cg302_with_the_schedulers_fix(tmp_path):
    (f,) = errors_of(tmp_path, STEP.format(opt=ADAMW_TENSOR_LR,
                                           sched="torch.optim.lr_scheduler.StepLR(opt, 2, gamma=0.5)"))
    assert (f.rule, f.line) == ("CG302", SCHED_LINE)
    assert "the learning-rate scheduler branches on its Python epoch count" in f.message
    assert f.hint.startswith("Step the scheduler outside the captured step")


def test_a_schedule_computed_on_the_device_alone_is_not_reported(tmp_path):
    assert errors_of(tmp_path, STEP.format(opt=ADAMW_TENSOR_LR,
                                           sched="torch.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)")) == []


def test_a_users_own_fill_is_told_to_move_out_of_the_step(tmp_path):
    (f,) = errors_of(tmp_path, USER_FILL)
    assert (f.rule, f.line) == ("CG402", 10) and f.library is None
    assert f.message.startswith("the Python number passed to `Tensor.fill_` changes between iterations")
    assert f.hint.startswith("Move this update out of the captured step")


KV_WRITE = '''import torch


def setup(device):
    return {"w": torch.randn(8, 8, device=device), "cache": torch.zeros(1, 32, 8, device=device)}


def inputs(i, device):
    return {"x": torch.randn(1, 8, generator=torch.Generator().manual_seed(i)).to(device), "pos": 4 + i}


@torch.no_grad()
def step(w, cache, x, pos):
    cache[:, pos] = x @ w
    return cache.sum(1)
'''


def test_a_changing_position_indexing_a_cache_is_told_to_index_with_a_device_tensor(tmp_path):
    (f,) = errors_of(tmp_path, KV_WRITE)
    assert (f.rule, f.line) == ("CG402", 14)
    assert "`Tensor.__setitem__` changes between iterations (5 then 6)" in f.message
    assert f.hint.startswith("Index with a device tensor the graph reads") and "index_copy_" in f.hint
