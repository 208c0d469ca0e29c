"""`nn.Module.compile(mode="reduce-overhead")`: the module compiles itself in place (its __call__ is compiled)."""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.silu(self.up(x)))


def setup(device):
    torch.manual_seed(0)
    model = Block(256).to(device).eval()
    model.compile(mode="reduce-overhead")
    return {"model": model}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(32, 256, generator=g).to(device)}


@torch.no_grad()
def step(model, x):
    return model(x)
