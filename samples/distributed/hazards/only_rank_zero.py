"""Hazard: the step's only collective is in a rank-dependent branch: rank 0 enters an all_reduce that no other
rank ever calls. Plain PyTorch hangs in eager warmup (until NCCL's timeout); the other ranks go on to capture,
which needs no peer. cgtool compares the ranks' collectives as they run and stops every rank within seconds."""

import torch
import torch.distributed as dist


def setup(device, rank):
    return {"w": torch.randn(256, 256, device=device), "rank": rank}


def inputs(i, device):
    return {"x": torch.randn(16, 256, device=device)}


def step(w, rank, x):
    y = x @ w
    if rank == 0:
        dist.all_reduce(y)  # expect: CG601
    return y.relu()
