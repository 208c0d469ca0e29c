"""Hazard: the capture fails on the last rank only (a synchronize inside the step there), while the other
ranks captured and wait on its collectives. cgtool must stop every rank and say which one failed where."""

import torch
import torch.distributed as dist


def setup(device, rank, world_size):
    return {"w": torch.randn(256, 256, device=device), "last": rank == world_size - 1}


def inputs(i, device):
    return {"x": torch.randn(16, 256, device=device)}


def step(w, last, x):
    y = x @ w
    if last:
        torch.cuda.synchronize()  # expect: CG104, CG603
    dist.all_reduce(y)
    return y
