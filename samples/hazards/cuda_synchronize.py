"""Hazard: `torch.cuda.synchronize()` in the step (timing the forward pass).

Expected: CG104 (category sync). A device-wide synchronize inside capture invalidates it.
"""

import time

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(256, 256) for _ in range(4)]).to(device)
    return {"model": model, "times": []}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(64, 256, generator=g).to(device)}


@torch.no_grad()
def step(model, times, x):
    t0 = time.perf_counter()
    out = model(x)
    torch.cuda.synchronize()  # expect: CG104
    times.append(time.perf_counter() - t0)
    return out
