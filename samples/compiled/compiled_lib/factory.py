"""A model factory that compiles what it builds, as trainers and model zoos do."""

import torch
from torch import nn

WIDTH = 512


def build(device, mode="reduce-overhead"):
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH), nn.LayerNorm(WIDTH))
    mlp = mlp.to(device).eval()
    if mode is None:
        return torch.compile(mlp)  # inductor, no CUDA graphs
    return torch.compile(mlp, mode=mode)
