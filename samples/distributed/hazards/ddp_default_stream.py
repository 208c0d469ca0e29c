"""Hazard: DistributedDataParallel constructed on the default stream (PyTorch's docs ask for a side-stream
context). Measured on 2x H200 (torch 2.11, NCCL 2.28.9): capture fails on every rank with only
"operation failed due to a previous error during capture", even after 11 warmup iterations."""

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512)).to(device)
    ids = [torch.cuda.current_device()] if next(model.parameters()).is_cuda else None
    ddp = DDP(model, device_ids=ids)  # expect: CG604
    return {"model": ddp, "opt": torch.optim.SGD(ddp.parameters(), lr=0.01)}


def inputs(i, device):
    return {"x": torch.randn(32, 512, device=device), "y": torch.randn(32, 512, device=device)}


def step(model, opt, x, y):
    opt.zero_grad(set_to_none=False)
    nn.functional.mse_loss(model(x), y).backward()
    opt.step()
