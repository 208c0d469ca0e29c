"""Hazard: an exponential moving average of the loss kept in setup's dict, rebound every iteration.

Expected: CG406 (category rebound-state). `state["ema"] = ...` puts a new tensor in the dict each iteration.
The captured graph keeps reading the tensor that was in the dict at capture, so on replay the EMA never
moves; eager updates it.
"""

import torch
import torch.nn.functional as F
from torch import nn


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    return {"model": model, "opt": opt, "stats": {"ema": torch.zeros((), device=device), "steps": 0}}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(16, 32, generator=g).to(device), "y": torch.randn(16, 1, generator=g).to(device)}


def step(model, opt, stats, x, y):
    opt.zero_grad(set_to_none=True)
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    stats["ema"] = stats["ema"] * 0.99 + loss.detach() * 0.01  # expect: CG406
    stats["steps"] = stats["steps"] + 1  # a Python number: host bookkeeping, no tensor rebound
    return loss.detach()
