"""A DistributedDataParallel training step, prepared for capture as PyTorch's docs ask ("CUDA Graphs" →
"Usage with DistributedDataParallel"): DDP is constructed inside a side-stream context, and the run warms
up at least 11 DDP-enabled iterations on a side stream (cgtool's distributed default warmup is 11).

    cgtool capture --nproc-per-node 2 samples/distributed/ddp_train.py
"""

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def setup(device, rank):
    torch.manual_seed(0)  # the same initial weights on every rank (DDP broadcasts rank 0's anyway)
    model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024)).to(device)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # DDP constructed in a side-stream context
        ddp = DDP(model, device_ids=[torch.cuda.current_device()] if device.type == "cuda" and
                  next(model.parameters()).is_cuda else None)
    torch.cuda.current_stream().wait_stream(side)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    return {"model": ddp, "opt": opt, "rank": rank}


def inputs(i, device, rank):
    g = torch.Generator().manual_seed(100 * i + rank)  # each rank its own shard of the batch
    return {"x": torch.randn(32, 1024, generator=g).to(device), "y": torch.randn(32, 1024, generator=g).to(device)}


def step(model, opt, rank, x, y):
    opt.zero_grad(set_to_none=False)  # keep the .grad tensors: the graph writes into the same memory
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()  # DDP's reducer all-reduces the gradients (NCCL kernels in the graph)
    opt.step()
    return loss.detach()
