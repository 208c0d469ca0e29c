"""Hazard: printing a tensor element for debugging inside the step.

Expected: CG101 (category sync). Formatting a GPU tensor copies it to the host: capture is invalidated
("operation failed due to a previous error during capture").
"""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    return {"layer": nn.Linear(32, 32).to(device)}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(4, 32, generator=g).to(device)}


@torch.no_grad()
def step(layer, x):
    y = torch.relu(layer(x))
    print("debug", y[0, 0])  # expect: CG101
    return y
