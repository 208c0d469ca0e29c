"""Clean: running averages updated in place, on a module buffer and in setup's dict; the RNG seeded in setup.

Expected: no findings. `mul_`/`add_`/`lerp_` write into the tensors that were live at capture, so replay updates
the same memory eager does; dropout draws from the default generator, seeded once before the first step.
"""

import torch
import torch.nn.functional as F
from torch import nn


class RunningNorm(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("avg", torch.zeros(dim))

    def forward(self, x):
        y = F.dropout(self.proj(x), p=0.1, training=self.training)
        return y - self.avg


def setup(device):
    torch.manual_seed(1234)  # seeding belongs here, once
    norm = RunningNorm().to(device).train()
    return {"norm": norm, "stats": {"ema": torch.zeros((), device=device)}}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(32, 64, generator=g).to(device)}


@torch.no_grad()
def step(norm, stats, x):
    out = norm(x)
    norm.avg.mul_(0.9).add_(out.mean(0), alpha=0.1)
    stats["ema"].lerp_(out.pow(2).mean(), 0.01)
    scaled = out * 2.0  # a local rebound each iteration is no state
    scaled = scaled + 1.0
    return scaled
