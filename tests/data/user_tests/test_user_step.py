"""A user's own test file that asserts its steps stay capturable (docs/python-api.md). Not part of cgtool's suite
(tests/conftest.py leaves tests/data out): tests/test_user_tests.py runs it with pytest in a subprocess and checks
that the hazards fail with their findings as the message and the clean steps pass.

Each check runs the step in a cgtool worker process: the CPU analysis here, capture and the replay check where a
GPU is present."""

import os

import torch
from torch import nn

from cgtool.testing import assert_capturable

SAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, os.pardir, "samples")


def test_item_sync_sample():  # fails: CG101 at samples/hazards/item_sync.py:30
    assert_capturable(os.path.join(SAMPLES, "hazards", "item_sync.py"))


def test_mlp_inference_sample():  # passes
    assert_capturable(os.path.join(SAMPLES, "mlp_inference.py"))


# A step written in this test module: cgtool's worker imports this file again and finds the functions by name.
def make_model(device):
    torch.manual_seed(0)
    return {"model": nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device).eval()}


def batch(i, device):
    return {"x": torch.randn(8, 16, generator=torch.Generator().manual_seed(i)).to(device)}


@torch.no_grad()
def logging_step(model, x):
    y = model(x)
    if y.abs().max() > 100:  # a branch on a GPU value: a sync, and a branch the graph would freeze
        y = y / 100
    return y


@torch.no_grad()
def clean_step(model, x):
    return model(x).softmax(-1)


def test_logging_step(cgtool_check):  # fails: the `if` on a GPU value, at its line in this file
    cgtool_check(logging_step, setup=make_model, inputs=batch)


def test_clean_step():  # passes
    report = assert_capturable(clean_step, setup=make_model, inputs=batch)
    assert report.status in ("cpu-only", "captured")  # analysed on CPU, or captured on a GPU
    assert not report.problems()
