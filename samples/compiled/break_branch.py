"""A graph break from a data-dependent Python branch inside a reduce-overhead function."""

import torch


@torch.compile(mode="reduce-overhead")
def clip(x, w):
    h = x @ w
    if h.norm() > 100.0:  # expect: CG705
        h = h * 0.5
    return torch.tanh(h)


def setup(device):
    torch.manual_seed(0)
    return {"w": torch.randn(256, 256, device=device) / 16}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(64, 256, generator=g).to(device)}


@torch.no_grad()
def step(w, x):
    return clip(x, w)
