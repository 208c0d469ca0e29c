"""Clean: a whole training step with a capturable AdamW (forward, loss, backward, step).

Expected: no error findings. capturable=True keeps the optimizer's step count on the device, and the
step has no host reads; gradients are reset with set_to_none=True inside the step.
"""

import torch
import torch.nn.functional as F
from torch import nn


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, capturable=True)
    return {"model": model, "opt": opt}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    x = torch.randn(32, 128, generator=g)
    y = torch.randint(0, 10, (32,), generator=g)
    return {"x": x.to(device), "y": y.to(device)}


def step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()
