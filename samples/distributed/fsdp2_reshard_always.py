"""FSDP2 with torchtitan's "always" resharding: `reshard_after_forward=True` on every block and on the root, so
each forward frees the gathered parameters and backward all-gathers them again (on FSDP2's all-gather streams).
torchtitan reports that this policy breaks whole-iteration capture (CUDA_ERROR_STREAM_CAPTURE_ISOLATION). Not
on torch 2.11 here: plain PyTorch on 2x H200 (tests/gpu/dist_rows_truth.py, 3 side-stream warmups) captures and
replays it correctly on both ranks, captured on the warmup stream or on `torch.cuda.graph`'s own, as it does
every other setting measured (True, False, torchtitan's default: all but the last block; root True, False,
unset). An int (reshard to a smaller group) needs more than 2 GPUs: on 2, 1 means False and 2 means True.

    cgtool capture --nproc-per-node 2 samples/distributed/fsdp2_reshard_always.py
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
    torch.manual_seed(0)
    model = nn.Sequential(*[Block() for _ in range(BLOCKS)]).to(device)
    mesh = init_device_mesh(next(model.parameters()).device.type, (world_size,))
    for block in model:
        fully_shard(block, mesh=mesh, reshard_after_forward=True)
    fully_shard(model, mesh=mesh, reshard_after_forward=True)  # the root too: torchtitan's "always"
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
    return {"model": model, "opt": opt}


def inputs(i, device, rank):
    g = torch.Generator().manual_seed(100 * i + rank)
    return {"x": torch.randn(BATCH, DIM, generator=g).to(device), "y": torch.randn(BATCH, DIM, generator=g).to(device)}


def step(model, opt, x, y):
    opt.zero_grad(set_to_none=False)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()
