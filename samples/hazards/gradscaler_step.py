"""Hazard: `scaler.step(opt)` of torch.amp.GradScaler inside the captured training step.

Expected: CG101 (category sync). GradScaler checks found_inf with `.item()` before stepping, which
invalidates the capture.
"""

import torch
import torch.nn.functional as F
from torch import nn


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    scaler = torch.amp.GradScaler(device.type)
    return {"model": model, "opt": opt, "scaler": scaler}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(16, 64, generator=g).to(device), "y": torch.randn(16, 1, generator=g).to(device)}


def step(model, opt, scaler, x, y):
    opt.zero_grad(set_to_none=True)
    loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(opt)  # expect: CG101
    scaler.update()
    return loss.detach()
