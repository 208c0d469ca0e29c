"""Hazard: a learning-rate scheduler stepped inside the captured training step.

Expected: CG402 (category replay-differs). The optimizer is capturable and its learning rate is a device tensor,
so the step captures, but CosineAnnealingLR computes each new learning rate on the host and writes it into that
tensor with a Python number: the graph keeps the number of the step it was captured at, and replay repeats it at
every step while eager follows the schedule. Fix: step the scheduler outside the graph, between replays (the lr
tensor it writes is read by the replayed optimizer kernels).
"""

import torch
import torch.nn.functional as F
from torch import nn


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=torch.tensor(1e-2, device=device), capturable=True)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=20)
    return {"model": model, "opt": opt, "sched": sched}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(8, 32, generator=g).to(device)}


def step(model, opt, sched, x):
    opt.zero_grad(set_to_none=False)
    loss = F.mse_loss(model(x), x)
    loss.backward()
    opt.step()
    sched.step()  # expect: CG402
    return loss.detach()
