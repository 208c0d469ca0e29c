"""Written only to the documented script contract (docs/script-contract.md), for ranks (`setup(device, rank,
world_size)`, torch.distributed): a plain `cgtool lint` runs it as a world of one rank. Hazards after the
all-reduce: a boolean-mask selection, a scale made from a Python number every iteration, and a print of a
GPU value. A GPU capture fails at the mask; the CPU analysis of the whole step, as a world of one too, names
the rest."""

import torch
import torch.distributed as dist
from torch import nn


def setup(device, rank, world_size):
    torch.manual_seed(0)
    return {"net": nn.Linear(64, 64).to(device), "seen": [0], "world": world_size}


def inputs(i, device, rank):
    g = torch.Generator().manual_seed(i * 7 + rank)
    return {"x": torch.randn(32, 64, generator=g).to(device)}


@torch.no_grad()
def step(net, seen, world, x):
    y = net(x)
    dist.all_reduce(y)
    positive = y[y > 0]  # expect: CG102
    seen[0] += 1
    scale = torch.tensor(1.0 / (world * seen[0]), device=x.device)  # expect: CG402
    print("mean", positive.mean().item())  # expect: CG101
    return y * scale
