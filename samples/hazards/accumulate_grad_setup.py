"""Hazard: setup runs a first training step to log the starting loss and keeps the loss itself. That keeps the
step's autograd graph alive, and with it the AccumulateGrad nodes autograd made there, on the default stream.
Every later backward reuses them: PyTorch warns "The AccumulateGrad node's stream does not match the stream of
the node that produced the incoming gradient", and during capture backward makes the default stream wait on the
capturing stream. Plain PyTorch (H200, torch 2.11): the warning in the side-stream warmup, then a capture that
fails with cudaErrorStreamCaptureInvalidated at the end of capture, naming no line. Fix: keep
`first_loss.detach()` (or a float), not the loss."""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    first_loss = model(torch.randn(32, 256, device=device)).square().mean()  # the starting loss, for the log
    first_loss.backward()
    return {"model": model, "opt": opt, "log": {"first_loss": first_loss}}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(32, 256, generator=g).to(device)}


def step(model, opt, log, x):
    opt.zero_grad(set_to_none=False)
    loss = model(x).square().mean()
    loss.backward()  # expect: CG407
    opt.step()
    return loss.detach()
