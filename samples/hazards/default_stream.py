"""Hazard: the step copies its result on the default stream.

Expected: CG202 (category default-stream), at the switch and at the copy. Capture does not record
work on the default stream: the copy runs once, eagerly, and replay leaves `out` untouched (measured:
after new inputs and replay, `out` stayed all zeros).
"""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    return {"proj": nn.Linear(128, 128).to(device), "out": torch.zeros(32, 128, device=device)}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(32, 128, generator=g).to(device)}


@torch.no_grad()
def step(proj, out, x):
    b = proj(x)
    with torch.cuda.stream(torch.cuda.default_stream()):  # expect: CG202
        out.copy_(b)  # expect: CG202
    return out
