"""Hazards (three): a boolean-mask index, a `.item()` on the next line, and that Python number used in the
step's math. A GPU capture fails at the mask index; the other two are found by the analysis of the whole
step (not reached by the capture).
"""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    return {"net": nn.Linear(128, 128).to(device)}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(64, 128, generator=g).to(device)}


@torch.no_grad()
def step(net, x):
    y = net(x)
    kept = y[y > 0]  # expect: CG102
    scale = kept.mean().item()  # expect: CG101
    return y * torch.tensor(scale, device=y.device)  # expect: CG402
