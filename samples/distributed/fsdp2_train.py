"""An FSDP2 training step as torchtitan runs one: `fully_shard` on each block and on the root, Adam with
`capturable=True` (its step counter stays on the GPU), `zero_grad(set_to_none=False)` so the sharded
gradients keep their memory. In the graph: FSDP2's all-gathers (forward and backward, one per block) and
reduce-scatters (one per block), on FSDP2's own streams, forked from and joined back to the capturing stream.

    cgtool capture --nproc-per-node 2 samples/distributed/fsdp2_train.py
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
    on = next(model.parameters()).device.type  # "cpu" in cgtool's CPU analysis (gloo), else "cuda"
    mesh = init_device_mesh(on, (world_size,))
    for block in model:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
    return {"model": model, "opt": opt}


def inputs(i, device, rank):
    g = torch.Generator().manual_seed(100 * i + rank)  # each rank its own part of the batch
    return {"x": torch.randn(BATCH, DIM, generator=g).to(device), "y": torch.randn(BATCH, DIM, generator=g).to(device)}


def step(model, opt, x, y):
    opt.zero_grad(set_to_none=False)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()  # FSDP2 reduce-scatters each block's gradients into its shard
    opt.step()
    return loss.detach()
