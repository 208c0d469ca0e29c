"""A tensor-parallel step: a row-parallel linear layer (each rank holds a slice of the input features and
of the weight's rows) whose partial products are summed with an explicit all_reduce, then a GELU.

    cgtool capture --nproc-per-node 2 samples/distributed/tensor_parallel.py
"""

import torch
import torch.distributed as dist

IN, OUT, BATCH = 4096, 4096, 64


def setup(device, rank, world_size):
    torch.manual_seed(0)  # every rank builds the same full weight and keeps its own rows
    weight = torch.randn(IN, OUT) / IN**0.5
    rows = IN // world_size
    return {"w": weight[rank * rows:(rank + 1) * rows].to(device), "rank": rank, "rows": rows}


def inputs(i, device):
    g = torch.Generator().manual_seed(1000 + i)  # the same full input on every rank
    return {"x": torch.randn(BATCH, IN, generator=g).to(device)}


def step(w, rank, rows, x):
    partial = x[:, rank * rows:(rank + 1) * rows] @ w
    dist.all_reduce(partial)  # the sum over ranks: the full x @ weight
    return torch.nn.functional.gelu(partial)
