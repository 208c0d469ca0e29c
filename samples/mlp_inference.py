"""MLP inference step: 20 small Linear+GELU layers at batch 32 — launch-bound, so replay shines.

    cgtool capture samples/mlp_inference.py
"""

import torch
from torch import nn

WIDTH, DEPTH, BATCH = 512, 20, 32


def setup(device):
    torch.manual_seed(0)
    layers = []
    for _ in range(DEPTH):
        layers += [nn.Linear(WIDTH, WIDTH), nn.GELU()]
    model = nn.Sequential(*layers).to(device).eval()
    return {"model": model}


def inputs(i, device, size=BATCH):
    """`size` is the batch size; `cgtool bench --sizes 1,8,32` captures one graph per size."""
    g = torch.Generator().manual_seed(i)  # CPU generator: inputs are made outside the step
    return {"x": torch.randn(size, WIDTH, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)
