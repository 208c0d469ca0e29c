"""Uses a debug activation that acme/debug.py compiled at import (assignment form, reduce-overhead)."""

import torch
from torch import nn

from acme.debug import logged_activation

WIDTH = 256


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.LayerNorm(WIDTH)).to(device).eval()
    return {"model": model}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(16, WIDTH, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return logged_activation(model(x))
