"""A block whose __init__ compiles itself with mode="reduce-overhead" (see acme/blocks.py)."""

import torch

from acme.blocks import GatedBlock

WIDTH = 256


def setup(device):
    torch.manual_seed(0)
    block = GatedBlock(WIDTH, 512).to(device).eval()
    return {"block": block}


def inputs(i, device):
    g = torch.Generator().manual_seed(i)
    return {"x": torch.randn(48, WIDTH, generator=g).to(device)}


@torch.no_grad()
def step(block, x):
    return block(x)
