"""Hazard: a tensor built from a Python int on the GPU in every iteration (the timestep of a diffusion step).

Expected: CG402 (category host-input). The host-to-device copy from pageable memory fails in capture
("Cannot copy between CPU and CUDA tensors ... unless the CPU tensor is pinned"); pinned, replay would
still reuse the value captured.
"""

import torch
from torch import nn


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.t_embed = nn.Embedding(1000, 64)
        self.net = nn.Sequential(nn.Linear(64, 64), nn.SiLU(), nn.Linear(64, 64))

    def forward(self, x, t):
        return self.net(x + self.t_embed(t))


def setup(device):
    torch.manual_seed(0)
    return {"model": Denoiser().to(device), "clock": {"t": 999}, "device": device}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(4, 64, generator=g).to(device)}


@torch.no_grad()
def step(model, clock, device, x):
    clock["t"] -= 1
    t = torch.tensor([clock["t"]], device=device)  # expect: CG402
    return model(x, t)
