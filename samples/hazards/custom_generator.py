"""Hazard: noise drawn from a custom CUDA generator (for reproducible augmentation).

Expected: CG401 (category rng). The generator is not registered with the graph: capture fails with
"Attempt to increase offset for a CUDA generator not in capture mode".
"""

import torch
from torch import nn


def setup(device):
    gen = torch.Generator(device=device)
    gen.manual_seed(1234)
    return {"net": nn.Linear(64, 64).to(device), "gen": gen}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(32, 64, generator=g).to(device)}


@torch.no_grad()
def step(net, gen, x):
    noise = torch.randn(x.shape, device=x.device, generator=gen)  # expect: CG401
    return net(x + 0.1 * noise)
