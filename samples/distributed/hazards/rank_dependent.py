"""Hazard: a collective only rank 0 calls. The other ranks never join it: a real run deadlocks (NCCL waits
forever, the job hangs until a timeout kills it). cgtool compares the ranks' collectives."""

import torch
import torch.distributed as dist


def setup(device, rank):
    return {"w": torch.randn(256, 256, device=device), "rank": rank}


def inputs(i, device):
    return {"x": torch.randn(16, 256, device=device)}


def step(w, rank, x):
    y = x @ w
    dist.all_reduce(y)
    if rank == 0:
        dist.all_reduce(y)  # expect: CG601
    return y
