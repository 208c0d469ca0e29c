"""torch.compile under FSDP2: `fully_shard` on each block and on the root, then the sharded model compiled with
mode="reduce-overhead" (CUDAGraph Trees), Adam `capturable=True`. Each rank compiles its own step; dynamo breaks
the graph at FSDP2's own hooks (`torch._dynamo.disable` in torch's _fsdp_state.py), and the trees record each
block's graphs again while FSDP2 frees and re-gathers the parameters. Plain PyTorch on 2x H200 (torch 2.11,
tests/gpu/dist_compiled_truth.py): 1 graph break per rank, no cudagraph skip, the trees' graphs recorded on
both ranks, finite losses.

    cgtool capture --nproc-per-node 2 samples/distributed/fsdp2_compiled.py
"""

import torch
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

DIM, BLOCKS, BATCH = 1024, 4, 32


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(DIM, 4 * DIM), nn.Linear(4 * DIM, DIM)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(x)))


def setup(device, world_size):
    torch.manual_seed(0)  # the same initial weights on every rank; each keeps its shard
    model = nn.Sequential(*[Block() for _ in range(BLOCKS)]).to(device)
    mesh = init_device_mesh(next(model.parameters()).device.type, (world_size,))
    for block in model:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    model = torch.compile(model, mode="reduce-overhead")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
    return {"model": model, "opt": opt}


def inputs(i, device, rank):
    g = torch.Generator().manual_seed(100 * i + rank)  # each rank its own part of the batch
    return {"x": torch.randn(BATCH, DIM, generator=g).to(device), "y": torch.randn(BATCH, DIM, generator=g).to(device)}


def step(model, opt, x, y):
    opt.zero_grad(set_to_none=False)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()
