"""Hazard: `dist.barrier()` inside the step. A barrier makes the host wait until every rank reached it (NCCL:
a one-element all-reduce, then a wait on the device): a host synchronization, which capture does not allow.
Plain PyTorch: the capture fails at the barrier's line."""

import torch
import torch.distributed as dist


def setup(device):
    return {"w": torch.randn(256, 256, device=device)}


def inputs(i, device):
    return {"x": torch.randn(16, 256, device=device)}


def step(w, x):
    y = x @ w
    dist.all_reduce(y)
    dist.barrier()  # expect: CG608
    return y.relu()
