"""Hazard: `.item()` inside the step (logging the loss every iteration).

Expected: CG101 (category sync). `.item()` copies the loss to the host and waits for the GPU; during
capture the copy is illegal and the capture is invalidated ("operation failed due to a previous error
during capture"), without naming this line.
"""

import torch
import torch.nn.functional as F
from torch import nn


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return {"model": model, "opt": opt, "history": []}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(32, 64, generator=g).to(device), "y": torch.randint(0, 10, (32,), generator=g).to(device)}


def step(model, opt, history, x, y):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    history.append(loss.item())  # expect: CG101
    return loss.detach()
