"""Partial capture: a training step that logs the loss with `.item()` between backward and the optimizer step.

Whole-step capture fails at the `.item()` line (CG101). `cgtool capture --piecewise` runs the step with the
stretches around it as CUDA graphs (forward, backward, optimizer step) and the `.item()` eager; `--modules 1`
shows that `model` graphs whole (the `.item()` is outside it).
"""

import torch
import torch.nn.functional as F
from torch import nn


def setup(device):
    torch.manual_seed(0)
    layers = [nn.Sequential(nn.Linear(256, 256), nn.GELU()) for _ in range(8)]
    model = nn.Sequential(*layers, nn.Linear(256, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return {"model": model, "opt": opt, "log": []}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(64, 256, generator=g).to(device), "y": torch.randint(0, 10, (64,), generator=g).to(device)}


def step(model, opt, log, x, y):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    log.append(loss.item())  # expect: CG101
    opt.step()
    return loss.detach()
