"""A graph break from `print` of a tensor inside a reduce-overhead function (debug output left in)."""

import torch


@torch.compile(mode="reduce-overhead")
def layer(x, w):
    h = torch.relu(x @ w)
    print("activation sample", h[0, :2])  # expect: CG705
    return h @ w.t()


def setup(device):
    torch.manual_seed(0)
    return {"w": torch.randn(256, 256, device=device) / 16}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(64, 256, generator=g).to(device)}


@torch.no_grad()
def step(w, x):
    return layer(x, w)
