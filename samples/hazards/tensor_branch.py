"""Hazard: a Python `if` on a tensor value (`if y.mean() > 1.5:`).

Expected: CG101 (category sync). `bool(tensor)` reads the value on the host (aten._local_scalar_dense):
capture is invalidated. Even without the sync, replay would repeat whichever branch was captured.
"""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    return {"net": nn.Sequential(nn.Linear(16, 16), nn.Softplus()).to(device)}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": (torch.randn(8, 16, generator=g) * (1 + i)).to(device)}


@torch.no_grad()
def step(net, x):
    y = net(x)
    if y.mean() > 1.5:  # expect: CG101
        y = y / y.mean()
    return y
