"""Hazard: AdamW created without capturable=True, stepped inside the captured training step.

Expected: CG404 (category capture-error). The optimizer keeps its step count on the host and computes
its bias corrections in Python; PyTorch refuses to capture it ("Attempting CUDA graph capture of step()
... capturable is False").
"""

import torch
import torch.nn.functional as F
from torch import nn


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
    return {"model": model, "opt": opt}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(8, 32, generator=g).to(device)}


def step(model, opt, x):
    opt.zero_grad(set_to_none=True)
    loss = F.mse_loss(model(x), x)
    loss.backward()
    opt.step()  # expect: CG404
    return loss.detach()
