"""A 1,000-block model of tiny residual blocks (about 3,000 graph nodes): the scale test.

    cgtool capture samples/deep_1000.py

Each block is Linear(64, 64) → ReLU → residual add, three kernels; eager time is all launch
overhead, which replay removes.
"""

import torch
from torch import nn

BLOCKS, WIDTH, BATCH = 1000, 64, 16


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        return x + torch.relu(self.fc(x))


def setup(device):
    torch.manual_seed(0)
    model = nn.Sequential(*[Block() for _ in range(BLOCKS)]).to(device).eval()
    with torch.no_grad():
        for b in model:
            b.fc.weight.mul_(0.1)  # keep activations bounded through 1,000 residual blocks
    return {"model": model}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(BATCH, WIDTH, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)
