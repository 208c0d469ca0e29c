"""`nn.Module.compile(mode="reduce-overhead")`: the module compiles itself in place (its __call__ is compiled)."""

import torch
from torch import nn


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 1024), nn.SiLU(), nn.Linear(1024, 256)).to(device).eval()
    model.compile(mode="reduce-overhead")
    return {"model": model}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(32, 256, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)
