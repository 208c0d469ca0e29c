"""Tensor parallel inference with DTensor: an MLP whose first linear layer is split by columns and the second
by rows (`parallelize_module` with ColwiseParallel and RowwiseParallel); the row-parallel layer's partial sums
are all-reduced (an AllReduce in the graph). Parameters are DTensors: cgtool's replay check compares each
rank's local shards.

    cgtool capture --nproc-per-node 2 samples/distributed/dtensor_tp.py
"""

import torch
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

DIM, BATCH = 2048, 64


def setup(device, world_size):
    torch.manual_seed(0)  # the same full weights on every rank; parallelize_module keeps each rank's part
    mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM)).to(device)
    mesh = init_device_mesh(mlp[0].weight.device.type, (world_size,))  # "cpu" in cgtool's CPU analysis (gloo)
    parallelize_module(mlp, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    return {"mlp": mlp}


def inputs(i, device):
    g = torch.Generator().manual_seed(1000 + i)  # the same input on every rank (ColwiseParallel replicates it)
    return {"x": torch.randn(BATCH, DIM, generator=g).to(device)}


@torch.no_grad()
def step(mlp, x):
    return mlp(x)
