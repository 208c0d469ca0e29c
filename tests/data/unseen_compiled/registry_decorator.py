"""Calls a kernel that acme/kernels.py compiled at import with a reduce-overhead decorator."""

import torch
from torch import nn

from acme.kernels import fused_bias_gelu_scale

WIDTH = 256


def setup(device):
    torch.manual_seed(0)
    proj = nn.Linear(WIDTH, WIDTH).to(device).eval()
    bias = torch.zeros(WIDTH, device=device)
    scale = torch.full((WIDTH,), 0.5, device=device)
    return {"proj": proj, "bias": bias, "scale": scale}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(32, WIDTH, generator=g).to(device)}


@torch.no_grad()
def step(proj, bias, scale, x):
    return fused_bias_gelu_scale(proj(x), bias, scale)
