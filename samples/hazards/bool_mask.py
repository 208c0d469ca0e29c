"""Hazard: boolean-mask indexing `y[y > 0]` (keep the positive scores).

Expected: CG102 (category sync). The output size depends on the data, so PyTorch calls nonzero and the
host waits for the GPU to learn the size; capture is invalidated.
"""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    scorer = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 1)).to(device)
    return {"scorer": scorer}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(256, 32, generator=g).to(device)}


@torch.no_grad()
def step(scorer, x):
    y = scorer(x).squeeze(-1)
    positive = y[y > 0]  # expect: CG102
    return positive.sum()
