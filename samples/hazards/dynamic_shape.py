"""Hazard: the batch size alternates between 8 and 12.

Expected: CG301 (category dynamic-shape), where the step first uses the input. Capture succeeds; replay
silently keeps the captured shape.
"""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(48, 96), nn.ReLU(), nn.Linear(96, 4)).to(device)
    return {"model": model}


def inputs(i, device):
    batch = 8 if i % 2 == 0 else 12  # the last batch of an epoch is smaller, say
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(batch, 48, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x).softmax(-1)  # expect: CG301
